/*
 * main: the xpool binary. One executable, many verbs; each verb lives in
 * its own cmd_*.c (see cli.h).
 */
#include "cli.h"

static const struct xp_cli_sub verbs[] = {
	{ "server", xp_cmd_server, "the controller: HTTP API, durable journal, scheduling" },
	{ "agent", xp_cmd_agent, "the node agent: discover devices, register, run assigned tasks" },
	{ "dev", xp_cmd_dev, "a controller with emulated nodes on a fresh data directory" },
	{ "cluster", xp_cmd_cluster, "check a cluster descriptor (YAML/JSON) and summarise it" },
	{ "sim", xp_cmd_sim,
	  "trace-driven simulator: replay OpenB, compare with published results, benchmarks" },
	{ "submit", xp_cmd_submit, "submit a job (flags or -f job.yaml)" },
	{ "jobs", xp_cmd_jobs, "list jobs" },
	{ "job", xp_cmd_job, "show one job" },
	{ "cancel", xp_cmd_cancel, "cancel jobs, by ID or by state, name, queue or tenant" },
	{ "hold", xp_cmd_hold, "keep pending jobs from starting until released" },
	{ "release", xp_cmd_release, "let held jobs start again" },
	{ "update", xp_cmd_update, "change a pending job: name, priority, queue, time limit" },
	{ "explain", xp_cmd_explain, "say why a pending job is not placed" },
	{ "logs", xp_cmd_logs, "print a job's output" },
	{ "nodes", xp_cmd_nodes, "list nodes" },
	{ "node", xp_cmd_node, "show one node and its devices" },
	{ "cordon", xp_cmd_cordon, "stop placing new work on a node (admin)" },
	{ "uncordon", xp_cmd_uncordon, "let a node take new work again (admin)" },
	{ "drain", xp_cmd_drain, "cordon a node until its jobs end (admin)" },
	{ "devices", xp_cmd_devices, "list devices" },
	{ "top", xp_cmd_top, "the pool as a live heatmap of nodes x devices" },
	{ "services", xp_cmd_services, "list services" },
	{ "service", xp_cmd_service,
	  "create, scale or delete a service; its endpoints; its proxy" },
	{ "queues", xp_cmd_queues, "list queues" },
	{ "queue", xp_cmd_queue, "create, change or delete a queue (admin)" },
	{ "tenants", xp_cmd_tenants, "list tenants (admin)" },
	{ "tenant", xp_cmd_tenant, "create a tenant (admin)" },
	{ "tokens", xp_cmd_tokens, "list API tokens (admin)" },
	{ "token", xp_cmd_token, "create or revoke an API token (admin)" },
	{ "cost", xp_cmd_cost, "metered usage and cost by tenant, queue or job" },
	{ "prices", xp_cmd_prices, "show or set the price table" },
	{ "count", xp_cmd_count, "add to a job's business counters" },
	{ "alerts", xp_cmd_alerts, "alert groups firing now (admin)" },
	{ "forecast", xp_cmd_forecast, "the cost model fitted on the usage history, and the hours ahead" },
	{ "advise", xp_cmd_advise, "what could be saved, and how much a month (admin)" },
	{ "events", xp_cmd_events, "print the controller's events (--follow to stream)" },
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
