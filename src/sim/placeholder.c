/* placeholder */ typedef int xp_sim_placeholder_;
