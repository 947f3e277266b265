/*
 * main: the xpool binary. One executable, many verbs; each verb lives in
 * its own cmd_*.c (see cli.h).
 */
#include "cli.h"

static const struct xp_cli_sub verbs[] = {
	{ "server", xp_verb_server, "the controller: HTTP API, durable journal, scheduling" },
	{ "agent", xp_verb_agent,
	  "the node agent: discover devices, register, run assigned tasks" },
	{ "dev", xp_verb_dev, "a controller with emulated nodes on a fresh data directory" },
	{ "cluster", xp_verb_cluster, "check a cluster descriptor (YAML/JSON) and summarise it" },
	{ "sim", xp_verb_sim,
	  "trace-driven simulator: replay OpenB, compare with published results, benchmarks" },
	{ "submit", xp_verb_submit, "submit a job (flags or -f job.yaml)" },
	{ "jobs", xp_verb_jobs, "list jobs" },
	{ "job", xp_verb_job, "show one job" },
	{ "cancel", xp_verb_cancel, "cancel jobs, by ID or by state, name, queue or tenant" },
	{ "hold", xp_verb_hold, "keep pending jobs from starting until released" },
	{ "release", xp_verb_release, "let held jobs start again" },
	{ "update", xp_verb_update, "change a pending job: name, priority, queue, time limit" },
	{ "explain", xp_verb_explain, "say why a pending job is not placed" },
	{ "logs", xp_verb_logs, "print a job's output" },
	{ "nodes", xp_verb_nodes, "list nodes" },
	{ "node", xp_verb_node, "show one node and its devices" },
	{ "cordon", xp_verb_cordon, "stop placing new work on a node (admin)" },
	{ "uncordon", xp_verb_uncordon, "let a node take new work again (admin)" },
	{ "drain", xp_verb_drain, "cordon a node until its jobs end (admin)" },
	{ "devices", xp_verb_devices, "list devices" },
	{ "top", xp_verb_top, "the pool as a live heatmap of nodes x devices" },
	{ "services", xp_verb_services, "list services" },
	{ "service", xp_verb_service,
	  "create, scale or delete a service; its endpoints; its proxy" },
	{ "queues", xp_verb_queues, "list queues" },
	{ "queue", xp_verb_queue, "create, change or delete a queue (admin)" },
	{ "tenants", xp_verb_tenants, "list tenants (admin)" },
	{ "tenant", xp_verb_tenant, "create a tenant (admin)" },
	{ "tokens", xp_verb_tokens, "list API tokens (admin)" },
	{ "token", xp_verb_token, "create or revoke an API token (admin)" },
	{ "cost", xp_verb_cost, "metered usage and cost by tenant, queue or job" },
	{ "prices", xp_verb_prices, "show or set the price table" },
	{ "count", xp_verb_count, "add to a job's business counters" },
	{ "alerts", xp_verb_alerts, "alert groups firing now (admin)" },
	{ "forecast", xp_verb_forecast,
	  "the cost model fitted on the usage history, and the hours ahead" },
	{ "advise", xp_verb_advise, "what could be saved, and how much a month (admin)" },
	{ "events", xp_verb_events, "print the controller's events (--follow to stream)" },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	return xp_cli_main(
		"xpool",
		"xpool pools GPUs, NPUs, FPGAs, ASICs and CPUs behind one resource model\n"
		"and places work on them.\n",
		verbs, argc, argv);
}
