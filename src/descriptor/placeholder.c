/* placeholder */ typedef int xp_desc_placeholder_;
