/*
 * main_daemon: the xpoold binary - the long-lived pieces (`server`, `dev`,
 * `agent`) with the libraries only they need (libmicrohttpd, SQLite,
 * hwloc). `xpool server|dev|agent` execs it (cmd_exec.c), so users run
 * `xpool` for everything.
 */
#include "cli.h"

static const struct xp_cli_sub verbs[] = {
	{ "server", xp_verb_server, "the controller: HTTP API, durable journal, scheduling" },
	{ "agent", xp_verb_agent,
	  "the node agent: discover devices, register, run assigned tasks" },
	{ "dev", xp_verb_dev, "a controller with emulated nodes on a fresh data directory" },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	return xp_cli_main("xpoold",
			   "xpoold runs xpool's long-lived pieces (run them as `xpool <verb>`);\n"
			   "every other verb is xpool's.\n",
			   verbs, argc, argv);
}
