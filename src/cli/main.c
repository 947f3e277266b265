/*
 * main: the xpool binary. One executable, many verbs; each verb lives in
 * its own cmd_*.c (see cli.h).
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
	{ "cluster", xp_cmd_cluster, "check a cluster descriptor (YAML/JSON) and summarise it" },
	{ "sim", xp_cmd_sim,
	  "trace-driven simulator: replay OpenB, compare with published results, benchmarks" },
	{ "submit", xp_cmd_submit, "submit a job (flags or -f job.yaml)" },
	{ "jobs", xp_cmd_jobs, "list jobs" },
	{ "job", xp_cmd_job, "show one job" },
	{ "cancel", xp_cmd_cancel, "cancel jobs" },
	{ "explain", xp_cmd_explain, "say why a pending job is not placed" },
	{ "logs", xp_cmd_logs, "print a job's output" },
	{ "nodes", xp_cmd_nodes, "list nodes" },
	{ "node", xp_cmd_node, "show one node and its devices" },
	{ "cordon", xp_cmd_cordon, "stop placing new work on a node (admin)" },
	{ "uncordon", xp_cmd_uncordon, "let a node take new work again (admin)" },
	{ "drain", xp_cmd_drain, "cordon a node until its jobs end (admin)" },
	{ "devices", xp_cmd_devices, "list devices" },
	{ "queues", xp_cmd_queues, "list queues" },
	{ "queue", xp_cmd_queue, "create, change or delete a queue (admin)" },
	{ "tenants", xp_cmd_tenants, "list tenants (admin)" },
	{ "tenant", xp_cmd_tenant, "create a tenant (admin)" },
	{ "tokens", xp_cmd_tokens, "list API tokens (admin)" },
	{ "token", xp_cmd_token, "create or revoke an API token (admin)" },
	{ "events", xp_cmd_events, "print the controller's events (--follow to stream)" },
	{ NULL, NULL, NULL },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: xpool <verb> [flags]   (xpool <verb> --help for each verb)\n\n"
		     "xpool pools GPUs, NPUs, FPGAs, ASICs and CPUs behind one resource model\n"
		     "and places work on them.\n\nverbs:\n");
	for (const struct verb *v = verbs; v->name; v++)
		fprintf(out, "  %-10s %s\n", v->name, v->about);
	fprintf(out, "  %-10s %s\n", "version", "print the version");
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
		printf("xpool %s\n", XP_VERSION);
		return 0;
	}
	for (const struct verb *v = verbs; v->name; v++)
		if (!strcmp(argv[1], v->name))
			return v->fn(argc - 2, argv + 2);
	fprintf(stderr, "xpool: unknown verb '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
