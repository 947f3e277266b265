/* signame (signame.c): the name of a Linux signal number ("SIGKILL" for
 * 9), for exit reports and what the CLI prints. Pure. */
#ifndef XP_SIGNAME_H
#define XP_SIGNAME_H

/* "SIGKILL"; NULL for a number without a name here (real-time signals, 0). */
const char *xp_signal_name(int sig);

#endif
