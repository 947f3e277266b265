/*
 * main_daemon: the xpoold binary - the long-lived pieces (`server`, `dev`,
 * `agent`) with the libraries only they need (libmicrohttpd, SQLite,
 * hwloc). `xpool server|dev|agent` execs it (cmd_exec.c), so users run
 * `xpool` for everything.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct verb {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *about;
} verbs[] = {
	{ "server", xp_cmd_server, "the controller: HTTP API, durable journal, scheduling" },
	{ "agent", xp_cmd_agent, "the node agent: discover devices, register, run assigned tasks" },
	{ "dev", xp_cmd_dev, "a controller with emulated nodes on a fresh data directory" },
	{ NULL, NULL, NULL },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: xpoold <verb> [flags]   (run as `xpool <verb>`)\n\n"
		     "xpoold runs xpool's long-lived pieces; every other verb is xpool's.\n\n"
		     "verbs:\n");
	for (const struct verb *v = verbs; v->name; v++)
		fprintf(out, "  %-10s %s\n", v->name, v->about);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("xpoold %s\n", XP_VERSION);
		return 0;
	}
	for (const struct verb *v = verbs; v->name; v++)
		if (!strcmp(argv[1], v->name))
			return v->fn(argc - 2, argv + 2);
	fprintf(stderr, "xpoold: unknown verb '%s' (the client verbs are xpool's)\n", argv[1]);
	usage(stderr);
	return 2;
}
