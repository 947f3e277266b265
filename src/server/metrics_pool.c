/*
 * metrics_pool: the pool's series of /metrics (issue 7 §1) - per device,
 * per node, per queue and tenant, the alert filter's counters. metrics.c
 * renders the controller's own (jobs, cycle, store, HTTP) and calls this.
 *
 * Device figures the agents report (utilisation, memory used, power,
 * temperature) appear only for devices that reported them; allocation and
 * health exist for every device. Label values are escaped as the text
 * format asks (backslash, quote, newline).
 */
#include "ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/strbuf.h"
#include "../lib/xalloc.h"
#include "alert.h"

static void esc(struct xp_sb *sb, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\\' || *s == '"')
			xp_sb_printf(sb, "\\%c", *s);
		else if (*s == '\n')
			xp_sb_puts(sb, "\\n");
		else
			xp_sb_putc(sb, *s);
	}
}

static void head(struct xp_sb *sb, const char *name, const char *type, const char *help)
{
	xp_sb_printf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{node="..",device="..",class="..",model=".."} */
static void dev_series(struct xp_sb *sb, const char *name, const struct xp_state *st, size_t n,
		       uint16_t d)
{
	const struct xp_node *node = &st->c->nodes[n];
	const struct xp_device *dv = &node->devs[d];
	xp_sb_printf(sb, "%s{node=\"", name);
	esc(sb, node->name);
	xp_sb_printf(sb, "\",device=\"%u\",class=\"%s\",model=\"", d, xp_class_name(dv->cls));
	esc(sb, dv->model ? xp_strtab_str(st->c->syms, dv->model) : "");
	xp_sb_puts(sb, "\"} ");
}

static void node_series(struct xp_sb *sb, const char *name, const char *node, const char *kind)
{
	xp_sb_printf(sb, "%s{node=\"", name);
	esc(sb, node);
	xp_sb_printf(sb, "\",kind=\"%s\"} ", kind);
}

static void devices(struct xp_ctl *ctl, struct xp_sb *sb)
{
	const struct xp_state *st = ctl->st;
	/* allocated milli per device, from the running replicas */
	XP_VEC(uint32_t) off = { 0 };
	size_t total = 0;
	for (size_t n = 0; n < st->nodes.n; n++) {
		xp_vec_push(&off, (uint32_t)total);
		total += st->c->nodes[n].ndevs;
	}
	uint32_t *milli = xcalloc(total + 1, sizeof(uint32_t));
	for (size_t n = 0; n < st->nodes.n; n++) {
		const struct xp_nodeinfo *ni = &st->nodes.v[n];
		for (size_t k = 0; k < ni->run.n; k++) {
			const struct xp_alloc *a = &ni->run.v[k].job->allocs[ni->run.v[k].replica];
			for (uint16_t i = 0; i < a->ndev; i++)
				milli[off.v[n] + a->devs[i]] += a->dev_milli ? a->dev_milli : 1000;
		}
	}
	static const struct {
		const char *name, *help;
	} series[] = {
		{ "xpool_device_allocated_ratio",
		  "Share of the device held by running jobs (0..1; fractions add)." },
		{ "xpool_device_healthy", "1 when the device may take work." },
		{ "xpool_device_memory_total_bytes", "Device memory." },
		{ "xpool_device_utilization_ratio", "Compute utilisation the agent reports (0..1)." },
		{ "xpool_device_memory_used_bytes", "Device memory in use, as the agent reports." },
		{ "xpool_device_power_watts", "Power draw the agent reports." },
		{ "xpool_device_temperature_celsius", "Temperature the agent reports." },
	};
	for (size_t s = 0; s < sizeof(series) / sizeof(series[0]); s++) {
		head(sb, series[s].name, "gauge", series[s].help);
		for (size_t n = 0; n < st->nodes.n; n++) {
			const struct xp_nodeinfo *ni = &st->nodes.v[n];
			const struct xp_node *node = &st->c->nodes[n];
			if (ni->removed)
				continue;
			for (uint16_t d = 0; d < node->ndevs; d++) {
				const struct xp_device *dv = &node->devs[d];
				const struct xp_devstat *x =
					n < ctl->live.n && d < ctl->live.v[n].ndev && ctl->live.v[n].dev
						? &ctl->live.v[n].dev[d]
						: NULL;
				if (dv->cls == XP_CLASS_CPU)
					continue;
				switch (s) {
				case 0:
					dev_series(sb, series[s].name, st, n, d);
					xp_sb_printf(sb, "%.3f\n", milli[off.v[n] + d] / 1000.0);
					break;
				case 1:
					dev_series(sb, series[s].name, st, n, d);
					xp_sb_printf(sb, "%d\n",
						     !(ni->dev_why && ni->dev_why[d] && *ni->dev_why[d]));
					break;
				case 2:
					dev_series(sb, series[s].name, st, n, d);
					xp_sb_printf(sb, "%llu\n",
						     (unsigned long long)dv->mem_mib * 1048576ULL);
					break;
				case 3:
					if (x && x->util_pct >= 0) {
						dev_series(sb, series[s].name, st, n, d);
						xp_sb_printf(sb, "%.2f\n", x->util_pct / 100.0);
					}
					break;
				case 4:
					if (x && x->mem_used_mib >= 0) {
						dev_series(sb, series[s].name, st, n, d);
						xp_sb_printf(sb, "%lld\n",
							     (long long)x->mem_used_mib * 1048576LL);
					}
					break;
				case 5:
					if (x && x->power_w >= 0) {
						dev_series(sb, series[s].name, st, n, d);
						xp_sb_printf(sb, "%d\n", x->power_w);
					}
					break;
				case 6:
					if (x && x->temp_c >= 0) {
						dev_series(sb, series[s].name, st, n, d);
						xp_sb_printf(sb, "%d\n", x->temp_c);
					}
					break;
				}
			}
		}
	}
	free(milli);
	xp_vec_free(&off);
}

static void nodes(struct xp_ctl *ctl, struct xp_sb *sb)
{
	const struct xp_state *st = ctl->st;
	size_t n = st->nodes.n;
	uint64_t *cpu = xcalloc(n + 1, sizeof(uint64_t)), *mem = xcalloc(n + 1, sizeof(uint64_t));
	for (size_t i = 0; i < n; i++) /* what the running replicas hold */
		for (size_t k = 0; k < st->nodes.v[i].run.n; k++) {
			const struct xp_replica_ref *rr = &st->nodes.v[i].run.v[k];
			cpu[i] += rr->job->allocs[rr->replica].cpu_milli;
			mem[i] += rr->job->allocs[rr->replica].mem_mib;
		}
	head(sb, "xpool_node_cpu_cores", "gauge", "CPU cores: allocatable, allocated to jobs.");
	for (size_t i = 0; i < n; i++) {
		if (st->nodes.v[i].removed)
			continue;
		node_series(sb, "xpool_node_cpu_cores", st->c->nodes[i].name, "allocatable");
		xp_sb_printf(sb, "%.3f\n", st->c->nodes[i].cpu_milli / 1000.0);
		node_series(sb, "xpool_node_cpu_cores", st->c->nodes[i].name, "allocated");
		xp_sb_printf(sb, "%.3f\n", cpu[i] / 1000.0);
	}
	head(sb, "xpool_node_memory_bytes", "gauge", "Host memory: allocatable, allocated to jobs.");
	for (size_t i = 0; i < n; i++) {
		if (st->nodes.v[i].removed)
			continue;
		node_series(sb, "xpool_node_memory_bytes", st->c->nodes[i].name, "allocatable");
		xp_sb_printf(sb, "%llu\n", (unsigned long long)st->c->nodes[i].mem_mib * 1048576ULL);
		node_series(sb, "xpool_node_memory_bytes", st->c->nodes[i].name, "allocated");
		xp_sb_printf(sb, "%llu\n", (unsigned long long)mem[i] * 1048576ULL);
	}
	free(cpu);
	free(mem);
	head(sb, "xpool_node_up", "gauge", "1 when the node is ready or draining (takes or runs work).");
	for (size_t i = 0; i < n; i++) {
		const struct xp_nodeinfo *ni = &st->nodes.v[i];
		if (ni->removed)
			continue;
		xp_sb_puts(sb, "xpool_node_up{node=\"");
		esc(sb, st->c->nodes[i].name);
		xp_sb_printf(sb, "\",state=\"%s\"} %d\n", xp_node_state_name(ni->state),
			     ni->state != XP_NODE_DOWN && ni->state != XP_NODE_DRAINED);
	}
}

/* a resource's amount in its unit: cores, bytes, devices */
static double res_value(int r, uint64_t v)
{
	return r == XP_RES_MEM ? (double)v * 1048576.0 : (double)v / 1000.0;
}

static void queues(struct xp_ctl *ctl, struct xp_sb *sb)
{
	const struct xp_state *st = ctl->st;
	head(sb, "xpool_queue_resource", "gauge",
	     "Per queue and resource (cpu in cores, memory in bytes, devices): used (its subtree "
	     "included), guarantee, max (when set).");
	for (size_t q = 0; q < st->queues.n; q++) {
		const struct xp_queue *qu = &st->queues.v[q];
		if (qu->deleted)
			continue;
		for (int r = 0; r < XP_RES_N; r++) {
			static const char *const kinds[] = { "used", "guarantee", "max" };
			uint64_t v[3] = { qu->usage[r], qu->guarantee[r], qu->max[r] };
			for (int k = 0; k < 3; k++) {
				if ((k == 1 && !v[1]) || (k == 2 && v[2] == XP_QUOTA_NONE) ||
				    (k == 0 && !v[0] && !qu->guarantee[r] && qu->max[r] == XP_QUOTA_NONE))
					continue;
				xp_sb_puts(sb, "xpool_queue_resource{queue=\"");
				esc(sb, qu->name);
				xp_sb_printf(sb, "\",resource=\"%s\",kind=\"%s\"} %.3f\n", xp_res_name(r),
					     kinds[k], res_value(r, v[k]));
			}
		}
	}
	/* pending by reason: held by dependencies, or waiting for room or quota */
	uint64_t *held = xcalloc(st->queues.n + 1, sizeof(uint64_t));
	for (size_t i = 0; i < st->pending.n; i++) {
		const struct xp_job *j = st->pending.v[i];
		if (j->state == XP_JOB_PENDING && j->unmet)
			held[j->queue]++;
	}
	head(sb, "xpool_queue_jobs", "gauge",
	     "Jobs per queue: running, pending for room or quota, pending on dependencies.");
	for (size_t q = 0; q < st->queues.n; q++) {
		const struct xp_queue *qu = &st->queues.v[q];
		if (qu->deleted)
			continue;
		static const char *const states[] = { "running", "pending_resources",
						      "pending_dependencies" };
		uint64_t v[3] = { qu->running, qu->pending >= held[q] ? qu->pending - held[q] : 0,
				  held[q] };
		for (int k = 0; k < 3; k++) {
			xp_sb_puts(sb, "xpool_queue_jobs{queue=\"");
			esc(sb, qu->name);
			xp_sb_printf(sb, "\",state=\"%s\"} %llu\n", states[k], (unsigned long long)v[k]);
		}
	}
	free(held);
	head(sb, "xpool_queue_share", "gauge", "Dominant share over weight (fair share's order).");
	for (size_t q = 0; q < st->queues.n; q++)
		if (!st->queues.v[q].deleted) {
			xp_sb_puts(sb, "xpool_queue_share{queue=\"");
			esc(sb, st->queues.v[q].name);
			xp_sb_printf(sb, "\"} %.6f\n", xp_queue_share(st, (uint32_t)q));
		}
	head(sb, "xpool_tenant_resource_used", "gauge",
	     "Per tenant and resource, what its running jobs hold (cores, bytes, devices).");
	for (size_t t = 0; t < st->tenants.n; t++)
		for (int r = 0; r < XP_RES_N; r++) {
			if (!st->tenants.v[t].usage[r] && r >= XP_RES_DEV)
				continue;
			xp_sb_puts(sb, "xpool_tenant_resource_used{tenant=\"");
			esc(sb, st->tenants.v[t].name);
			xp_sb_printf(sb, "\",resource=\"%s\"} %.3f\n", xp_res_name(r),
				     res_value(r, st->tenants.v[t].usage[r]));
		}
	head(sb, "xpool_tenant_jobs", "gauge", "Pending and running jobs per tenant.");
	for (size_t t = 0; t < st->tenants.n; t++) {
		xp_sb_puts(sb, "xpool_tenant_jobs{tenant=\"");
		esc(sb, st->tenants.v[t].name);
		xp_sb_printf(sb, "\"} %u\n", st->tenants.v[t].live);
	}
}

void xp_metrics_pool(struct xp_ctl *ctl, struct xp_sb *sb, int tenants)
{
	devices(ctl, sb);
	nodes(ctl, sb);
	if (tenants) /* they name queues and tenants: admin tokens only */
		queues(ctl, sb);
	xp_sb_printf(sb,
		     "# HELP xpool_vgpu_ooms_total GPU allocations refused: at a job's own cap "
		     "(cap), or by a device whose memory ran out under memory overcommit "
		     "(device), as the agents' heartbeats report.\n"
		     "# TYPE xpool_vgpu_ooms_total counter\n"
		     "xpool_vgpu_ooms_total{kind=\"cap\"} %llu\nxpool_vgpu_ooms_total{kind=\"device\"} "
		     "%llu\n"
		     "# HELP xpool_preemptions_total Jobs preempted (job.preempt records).\n"
		     "# TYPE xpool_preemptions_total counter\nxpool_preemptions_total %llu\n",
		     (unsigned long long)ctl->m.gpu_ooms[0], (unsigned long long)ctl->m.gpu_ooms[1],
		     (unsigned long long)ctl->m.preemptions);
	xp_sb_puts(sb, "# HELP xpool_placements_total Jobs started by the placement policy.\n"
		       "# TYPE xpool_placements_total counter\n");
	xp_sb_printf(sb, "xpool_placements_total{policy=\"%s\"} %llu\n",
		     ctl->o.policy ? ctl->o.policy : "bestfit", (unsigned long long)ctl->m.starts);
	if (ctl->alerts) {
		struct xp_alert_stats s;
		xp_alert_feed_stats(ctl, &s);
		xp_sb_printf(sb,
			     "# HELP xpool_alert_signals_total Raw alert signals (before the filter).\n"
			     "# TYPE xpool_alert_signals_total counter\n"
			     "xpool_alert_signals_total %llu\n"
			     "# HELP xpool_alert_notifications_total Alert notifications sent.\n"
			     "# TYPE xpool_alert_notifications_total counter\n"
			     "xpool_alert_notifications_total %llu\n",
			     (unsigned long long)s.signals, (unsigned long long)s.notifications);
	}
}
