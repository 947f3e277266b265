/*
 * signame: Linux's generic signal numbering (x86, arm, riscv; not alpha,
 * mips or sparc, which xpool does not run on). A table rather than
 * sigabbrev_np(): the controller and the CLI name a number an agent sent,
 * whatever libc they were built with.
 */
#include "signame.h"

#include <stddef.h>

static const char *const names[] = {
	NULL,	     "SIGHUP",	"SIGINT",    "SIGQUIT", "SIGILL",   "SIGTRAP", "SIGABRT", "SIGBUS",
	"SIGFPE",    "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2",  "SIGPIPE", "SIGALRM", "SIGTERM",
	"SIGSTKFLT", "SIGCHLD", "SIGCONT",   "SIGSTOP", "SIGTSTP",  "SIGTTIN", "SIGTTOU", "SIGURG",
	"SIGXCPU",   "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO",   "SIGPWR",  "SIGSYS",
};

const char *xp_signal_name(int sig)
{
	return sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])) ? names[sig] : NULL;
}
