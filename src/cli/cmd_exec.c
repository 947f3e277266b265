/*
 * cmd_exec: `xpool server`, `xpool dev` and `xpool agent` in the client
 * binary. The long-lived pieces live in a second executable, xpoold, next
 * to this one: it links the HTTP server (libmicrohttpd and its TLS stack),
 * SQLite and hwloc, which a client process should not load - a CLI call
 * (`xpool submit`) then maps 4 shared libraries instead of 17. These verbs replace
 * this process with xpoold (same pid, same arguments); a missing xpoold
 * is said plainly.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int exec_daemon(const char *verb, int argc, char **argv)
{
	char exe[4096], path[4200];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char **av = calloc((size_t)argc + 3, sizeof(*av));
	if (!av) {
		fprintf(stderr, "xpool %s: out of memory\n", verb);
		return 1;
	}
	av[0] = (char *)"xpoold";
	av[1] = (char *)verb;
	for (int i = 0; i < argc; i++)
		av[2 + i] = argv[i];
	if (n > 0) {
		exe[n] = '\0';
		snprintf(path, sizeof(path), "%s/xpoold", dirname(exe));
		execv(path, av);
	}
	execvp("xpoold", av); /* installed elsewhere on the PATH */
	fprintf(stderr, "xpool %s: cannot run xpoold (the server, dev and agent binary), "
			"looked next to this binary and on the PATH: %s\n",
		verb, strerror(errno));
	free(av);
	return 1;
}

int xp_verb_server(int argc, char **argv)
{
	return exec_daemon("server", argc, argv);
}

int xp_verb_dev(int argc, char **argv)
{
	return exec_daemon("dev", argc, argv);
}

int xp_verb_agent(int argc, char **argv)
{
	return exec_daemon("agent", argc, argv);
}
