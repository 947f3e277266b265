/*
 * metrics: /metrics in the Prometheus text exposition format (version
 * 0.0.4). Counters and histograms the owner keeps, plus the store's commit
 * statistics and the live GPU fragmentation of the core.
 *
 * Served off the owner (ctl.h, struct xp_metrics_pub): a scrape never
 * waits for the owner once a text exists, and 3,000 concurrent scrapes
 * share one copy of it. The series that name queues and tenants go to
 * admin tokens only.
 */
#include "ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/strbuf.h"

const double xp_hist_bounds[XP_HIST_BUCKETS] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
						 0.1,	 0.25,	0.5,	1,     2.5,  5,	    10 };

void xp_hist_add(struct xp_hist *h, double seconds)
{
	int i = 0;
	while (i < XP_HIST_BUCKETS && seconds > xp_hist_bounds[i])
		i++;
	h->count[i]++;
	h->sum += seconds;
	h->n++;
}

static void hist(struct xp_sb *sb, const char *name, const char *help, const uint64_t *count,
		 const double *bounds, int nb, double sum, uint64_t n)
{
	uint64_t cum = 0;
	xp_sb_printf(sb, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (int i = 0; i < nb; i++) {
		cum += count[i];
		xp_sb_printf(sb, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i],
			     (unsigned long long)cum);
	}
	xp_sb_printf(sb, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", name,
		     (unsigned long long)n, name, sum, name, (unsigned long long)n);
}

char *xp_metrics_render(struct xp_ctl *ctl, int tenants)
{
	struct xp_state *st = ctl->st;
	struct xp_sb sb;
	struct xp_store_stats ss;
	uint64_t nodes[XP_NODE_STATE_N] = { 0 };

	xp_sb_init(&sb);
	xp_sb_puts(&sb, "# HELP xpool_jobs Jobs by state.\n# TYPE xpool_jobs gauge\n");
	for (int s = 0; s < XP_JOB_STATE_N; s++)
		xp_sb_printf(&sb, "xpool_jobs{state=\"%s\"} %llu\n", xp_job_state_name(s),
			     (unsigned long long)st->count[s]);
	for (size_t n = 0; n < st->nodes.n; n++)
		if (!st->nodes.v[n].removed)
			nodes[st->nodes.v[n].state]++;
	xp_sb_puts(&sb, "# HELP xpool_nodes Nodes by state.\n# TYPE xpool_nodes gauge\n");
	for (int s = 0; s < XP_NODE_STATE_N; s++)
		xp_sb_printf(&sb, "xpool_nodes{state=\"%s\"} %llu\n", xp_node_state_name(s),
			     (unsigned long long)nodes[s]);
	xp_sb_printf(&sb,
		     "# HELP xpool_decisions_total Placement attempts of the scheduling cycle.\n"
		     "# TYPE xpool_decisions_total counter\n"
		     "xpool_decisions_total{result=\"placed\"} %llu\n"
		     "xpool_decisions_total{result=\"unplaced\"} %llu\n",
		     (unsigned long long)st->placed, (unsigned long long)st->unplaced);
	if (ctl->o.optimise) /* the cycle's batch search (optimise.c) */
		xp_sb_printf(&sb,
			     "# HELP xpool_search_batches_total Batch searches of the cycle.\n"
			     "# TYPE xpool_search_batches_total counter\n"
			     "xpool_search_batches_total %llu\n"
			     "# HELP xpool_search_jobs_total Jobs planned by batch searches.\n"
			     "# TYPE xpool_search_jobs_total counter\n"
			     "xpool_search_jobs_total %llu\n"
			     "# HELP xpool_search_rollouts_total Rollouts of the batch searches.\n"
			     "# TYPE xpool_search_rollouts_total counter\n"
			     "xpool_search_rollouts_total %llu\n"
			     "# HELP xpool_search_budget_rollouts Rollouts per search of the next "
			     "cycle call (--budget, calibrated when a time).\n"
			     "# TYPE xpool_search_budget_rollouts gauge\n"
			     "xpool_search_budget_rollouts %u\n",
			     (unsigned long long)st->batch.batches,
			     (unsigned long long)st->batch.searched,
			     (unsigned long long)st->batch.rollouts, ctl->opt.rollouts);
	hist(&sb, "xpool_schedule_latency_seconds", "Time from submission to start.",
	     ctl->m.sched_latency.count, xp_hist_bounds, XP_HIST_BUCKETS, ctl->m.sched_latency.sum,
	     ctl->m.sched_latency.n);
	hist(&sb, "xpool_scheduling_cycle_seconds", "Duration of one scheduling cycle call.",
	     ctl->m.cycle.count, xp_hist_bounds, XP_HIST_BUCKETS, ctl->m.cycle.sum, ctl->m.cycle.n);
	xp_store_stats(ctl->store, &ss);
	hist(&sb, "xpool_store_commit_seconds", "Duration of one journal commit (fsync included).",
	     ss.commit_hist, xp_store_commit_buckets, 12, ss.commit_seconds_sum, ss.commits);
	{
		double sum = (double)ss.records;
		hist(&sb, "xpool_store_batch_records", "Records per journal commit (group commit).",
		     ss.batch_hist, xp_store_batch_buckets, 12, sum, ss.commits);
	}
	pthread_mutex_lock(&ctl->m.mu);
	xp_sb_puts(&sb, "# HELP xpool_http_requests_total API replies by status class.\n"
			"# TYPE xpool_http_requests_total counter\n");
	for (int i = 1; i <= 5; i++)
		xp_sb_printf(&sb, "xpool_http_requests_total{code=\"%dxx\"} %llu\n", i,
			     (unsigned long long)ctl->m.http[i]);
	pthread_mutex_unlock(&ctl->m.mu);
	if (!st->sched_stale) {
		uint64_t total = xp_sched_total_milli(st->sched),
			 used = xp_sched_used_milli(st->sched);
		xp_sb_printf(&sb,
			     "# HELP xpool_device_milli Accelerator capacity in milli-devices.\n"
			     "# TYPE xpool_device_milli gauge\n"
			     "xpool_device_milli{kind=\"total\"} %llu\n"
			     "xpool_device_milli{kind=\"used\"} %llu\n",
			     (unsigned long long)total, (unsigned long long)used);
		double idle = (double)(total - used);
		xp_sb_printf(&sb,
			     "# HELP xpool_gpu_fragmentation_ratio F(M) / idle accelerator milli, "
			     "M estimated each minute from the last day's jobs (0 before any).\n"
			     "# TYPE xpool_gpu_fragmentation_ratio gauge\n"
			     "xpool_gpu_fragmentation_ratio %.6f\n",
			     idle > 0 ? xp_sched_frag(st->sched) / idle : 0);
	}
	xp_metrics_pool(ctl, &sb, tenants);
	xp_sb_printf(&sb,
		     "# HELP xpool_journal_seq Last journal sequence applied.\n"
		     "# TYPE xpool_journal_seq gauge\nxpool_journal_seq %llu\n",
		     (unsigned long long)st->seq);
	return xp_sb_steal(&sb);
}

static struct xp_mtext *mtext(struct xp_metrics_pub *p, char *text)
{
	size_t len = strlen(text);
	struct xp_mtext *m = malloc(sizeof(*m) + len + 1);
	if (!m)
		abort();
	m->refs = 1;
	m->pub = p;
	m->len = len;
	memcpy(m->text, text, len + 1);
	free(text);
	return m;
}

static void unref_locked(struct xp_mtext *m)
{
	if (m && --m->refs == 0)
		free(m);
}

void xp_mtext_release(void *arg)
{
	struct xp_mtext *m = arg;
	struct xp_metrics_pub *p = m->pub;
	pthread_mutex_lock(&p->mu);
	unref_locked(m);
	pthread_mutex_unlock(&p->mu);
}

void xp_metrics_publish(struct xp_ctl *ctl, int64_t now)
{
	struct xp_metrics_pub *p = &ctl->mx;
	pthread_mutex_lock(&p->mu);
	int due = p->wanted && (!p->full || now - p->at >= XP_METRICS_EVERY_MS);
	pthread_mutex_unlock(&p->mu);
	if (!due)
		return;
	struct xp_mtext *full = mtext(p, xp_metrics_render(ctl, 1));
	struct xp_mtext *open = mtext(p, xp_metrics_render(ctl, 0));
	pthread_mutex_lock(&p->mu);
	unref_locked(p->full);
	unref_locked(p->open);
	p->full = full;
	p->open = open;
	p->at = now;
	p->wanted = 0;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

struct xp_mtext *xp_metrics_take(struct xp_ctl *ctl, int full, int wait_ms)
{
	struct xp_metrics_pub *p = &ctl->mx;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&p->mu);
	if (!p->wanted && (!p->full || xp_ctl_now() - p->at >= XP_METRICS_EVERY_MS)) {
		p->wanted = 1; /* the owner renders at its next turn */
		pthread_mutex_lock(&ctl->qmu);
		pthread_cond_signal(&ctl->qcv);
		pthread_mutex_unlock(&ctl->qmu);
	}
	while (!p->full && pthread_cond_timedwait(&p->cv, &p->mu, &until) == 0)
		;
	struct xp_mtext *m = full ? p->full : p->open;
	if (m)
		m->refs++;
	pthread_mutex_unlock(&p->mu);
	return m;
}

void xp_metrics_pub_destroy(struct xp_metrics_pub *p)
{
	pthread_mutex_lock(&p->mu);
	unref_locked(p->full);
	unref_locked(p->open);
	p->full = p->open = NULL;
	pthread_mutex_unlock(&p->mu);
}
