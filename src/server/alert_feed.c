/*
 * alert_feed: the controller's side of alerting (docs/design/alerts.md).
 * The owner thread turns what it applies into signals for the engine
 * (alert.c) and evaluates the periodic rules; a sender thread posts the
 * engine's notifications to the webhook (--alert-webhook URL), each as one
 * JSON body, retried three times with a growing pause, then counted as
 * failed.
 *
 *   node_lost         a node is down (an agent's node lost), per node, by zone
 *   device_unhealthy  a device reported unhealthy, per device, by zone
 *   job_failing       a job requeued 3 times, or the same tenant's job name
 *                     failing 3 times in a row, by tenant
 *   queue_starved     a queue with pending jobs, none running, the oldest
 *                     waiting over --alert-starved (10 min), by queue tree
 *   quota_exhausted   a queue at its max of a resource with jobs pending
 *   gpu_out_of_memory a device whose memory ran out under shares that fit
 *                     their caps (memory overcommit), per device, by zone;
 *                     resolved by a heartbeat with no new refusals
 */
#include "ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../client/client.h"
#include "../lib/strbuf.h"
#include "../lib/strtab.h"
#include "../lib/xalloc.h"
#include "alert.h"

#define FAIL_STREAK  3
#define EVAL_MS	     10000
#define TICK_MS	     200 /* the engine's timers need no finer grain */
#define SEND_TRIES   3
#define SEND_TIMEOUT 5000

struct xp_alert_feed {
	struct xp_alerts *eng;
	int64_t next_eval, next_tick;
	struct xp_strtab *names;  /* "tenant\x01name" of failing jobs */
	XP_VEC(uint32_t) streak;  /* by symbol */
	/* the sender */
	pthread_t thr;
	int started, stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	XP_VEC(char *) q;
	uint64_t delivered, failed;
	char *base, *path;
};

static const char *zone_of(const struct xp_ctl *ctl, uint32_t n)
{
	xp_sym z = ctl->st->c->nodes[n].zone;
	return z ? xp_strtab_str(ctl->st->c->syms, z) : "pool";
}

static void node_signals(struct xp_ctl *ctl, uint32_t n, int64_t now)
{
	const struct xp_node *node = &ctl->st->c->nodes[n];
	const struct xp_nodeinfo *ni = &ctl->st->nodes.v[n];
	const char *zone = zone_of(ctl, n);
	xp_alerts_signal(ctl->alerts->eng, now, XP_AL_NODE_LOST, node->name, zone,
			 ni->state == XP_NODE_DOWN && !ni->removed, "down: its agent went silent");
	for (uint16_t d = 0; d < node->ndevs; d++) {
		char subj[160];
		snprintf(subj, sizeof(subj), "%s/%s%u", node->name, xp_class_name(node->devs[d].cls),
			 d);
		const char *why = ni->dev_why ? ni->dev_why[d] : NULL;
		xp_alerts_signal(ctl->alerts->eng, now, XP_AL_DEVICE_UNHEALTHY, subj, zone,
				 why && *why && !ni->removed, why);
	}
}

void xp_alert_feed_gpu_oom(struct xp_ctl *ctl, uint32_t n, uint16_t d, int firing)
{
	if (!ctl->alerts)
		return;
	const struct xp_node *node = &ctl->st->c->nodes[n];
	char subj[160];
	snprintf(subj, sizeof(subj), "%s/%s%u", node->name, xp_class_name(node->devs[d].cls), d);
	xp_alerts_signal(ctl->alerts->eng, xp_ctl_now(), XP_AL_GPU_OOM, subj, zone_of(ctl, n),
			 firing,
			 "device memory ran out: an allocation within its job's cap was refused "
			 "(memory overcommit)");
}

static void job_signals(struct xp_ctl *ctl, const struct xp_job *j, int64_t now)
{
	struct xp_alert_feed *f = ctl->alerts;
	const char *tenant = ctl->st->tenants.v[j->tenant].name;
	char subj[160], why[96];
	if (j->requeues >= FAIL_STREAK) {
		snprintf(subj, sizeof(subj), "job %llu", (unsigned long long)j->id);
		snprintf(why, sizeof(why), "requeued %u times (its nodes were lost)", j->requeues);
		xp_alerts_signal(f->eng, now, XP_AL_JOB_FAILING, subj, tenant,
				 j->state == XP_JOB_PENDING || j->state == XP_JOB_RUNNING, why);
	}
	if (j->state != XP_JOB_FAILED && j->state != XP_JOB_SUCCEEDED)
		return;
	/* streaks by name: a name is remembered from its first failure on */
	snprintf(subj, sizeof(subj), "%s\x01%s", tenant, j->spec.name ? j->spec.name : "");
	xp_sym s = j->state == XP_JOB_FAILED ? xp_strtab_intern(f->names, subj)
					     : xp_strtab_find(f->names, subj);
	if (!s)
		return;
	while (f->streak.n <= s)
		xp_vec_push(&f->streak, 0);
	f->streak.v[s] = j->state == XP_JOB_FAILED ? f->streak.v[s] + 1 : 0;
	snprintf(subj, sizeof(subj), "%s/%s", tenant, j->spec.name ? j->spec.name : "-");
	snprintf(why, sizeof(why), "failed %u times in a row (last: job %llu)", f->streak.v[s],
		 (unsigned long long)j->id);
	xp_alerts_signal(f->eng, now, XP_AL_JOB_FAILING, subj, tenant,
			 f->streak.v[s] >= FAIL_STREAK, why);
}

void xp_alert_feed_record(struct xp_ctl *ctl, const char *type, const struct xp_event_info *ev,
			  int64_t now)
{
	if (!ctl->alerts)
		return;
	if (ev->node >= 0 && (!strncmp(type, "node.", 5)))
		node_signals(ctl, (uint32_t)ev->node, now);
	if (ev->job && !strncmp(type, "job.", 4)) {
		const struct xp_job *j = xp_state_job(ctl->st, ev->job);
		if (j)
			job_signals(ctl, j, now);
	}
}

static void queue_signals(struct xp_ctl *ctl, int64_t now)
{
	const struct xp_state *st = ctl->st;
	int64_t *oldest = xcalloc(st->queues.n + 1, sizeof(int64_t));
	for (size_t i = 0; i < st->pending.n; i++) {
		const struct xp_job *j = st->pending.v[i];
		if (j->state == XP_JOB_PENDING && !j->unmet &&
		    (!oldest[j->queue] || j->submitted_at < oldest[j->queue]))
			oldest[j->queue] = j->submitted_at;
	}
	for (size_t q = 0; q < st->queues.n; q++) {
		const struct xp_queue *qu = &st->queues.v[q];
		char why[160];
		int starved = !qu->deleted && qu->pending && !qu->running && oldest[q] &&
			      now - oldest[q] >= ctl->o.alert_starved_ms;
		snprintf(why, sizeof(why), "%u pending, none running, the oldest for %llds",
			 qu->pending, (long long)(oldest[q] ? (now - oldest[q]) / 1000 : 0));
		xp_alerts_signal(ctl->alerts->eng, now, XP_AL_QUEUE_STARVED, qu->name, "queues",
				 starved, why);
		int full = -1;
		for (int r = 0; r < XP_RES_N && !qu->deleted && qu->pending; r++)
			if (qu->max[r] != XP_QUOTA_NONE && qu->usage[r] >= qu->max[r])
				full = r;
		snprintf(why, sizeof(why), "at its %s max with %u pending",
			 full >= 0 ? xp_res_name(full) : "-", qu->pending);
		xp_alerts_signal(ctl->alerts->eng, now, XP_AL_QUOTA_EXHAUSTED, qu->name, "queues",
				 full >= 0, why);
	}
	free(oldest);
}

static void enqueue(void *ctx, json_t *n)
{
	struct xp_alert_feed *f = ctx;
	char *s = xp_json_take(n);
	if (!f->base) { /* no webhook: the notification is only logged */
		fprintf(stderr, "xpool server: alert %s\n", s);
		free(s);
		return;
	}
	pthread_mutex_lock(&f->mu);
	xp_vec_push(&f->q, s);
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

void xp_alert_feed_tick(struct xp_ctl *ctl, int64_t now)
{
	struct xp_alert_feed *f = ctl->alerts;
	if (!f)
		return;
	if (now >= f->next_eval) {
		queue_signals(ctl, now);
		f->next_eval = now + EVAL_MS;
	}
	if (now >= f->next_tick) {
		xp_alerts_tick(f->eng, now, enqueue, f);
		f->next_tick = now + TICK_MS;
	}
}

static void *sender(void *arg)
{
	struct xp_alert_feed *f = arg;
	struct xp_err err = { 0 };
	struct xp_client *c = xp_client_create(f->base, NULL, &err);
	if (!c)
		fprintf(stderr, "xpool server: alert webhook %s: %s\n", f->base, err.text);
	else
		xp_client_set_timeout(c, SEND_TIMEOUT);
	pthread_mutex_lock(&f->mu);
	for (;;) {
		while (!f->q.n && !f->stop)
			pthread_cond_wait(&f->cv, &f->mu);
		if (!f->q.n && f->stop)
			break;
		char *body = f->q.v[0];
		memmove(f->q.v, f->q.v + 1, (f->q.n - 1) * sizeof(char *));
		f->q.n--;
		pthread_mutex_unlock(&f->mu);
		int ok = 0;
		for (int t = 0; c && t < SEND_TRIES && !ok; t++) {
			char *resp = NULL;
			size_t rlen;
			if (t)
				usleep((useconds_t)(250000 << t));
			ok = xp_client_call(c, "POST", f->path, NULL, "application/json", body,
					    strlen(body), &resp, &rlen, &err) >= 0;
			free(resp);
		}
		if (!ok)
			fprintf(stderr, "xpool server: alert webhook %s%s: %s (dropped)\n", f->base,
				f->path, c ? err.text : "no client");
		free(body);
		pthread_mutex_lock(&f->mu);
		if (ok)
			f->delivered++;
		else
			f->failed++;
	}
	pthread_mutex_unlock(&f->mu);
	xp_client_destroy(c);
	return NULL;
}

int xp_alert_feed_start(struct xp_ctl *ctl, struct xp_err *err)
{
	struct xp_alert_feed *f = xcalloc(1, sizeof(*f));
	struct xp_alert_opts o = { .group_wait_ms = ctl->o.alert_group_wait_ms,
				   .group_interval_ms = ctl->o.alert_interval_ms,
				   .repeat_ms = ctl->o.alert_repeat_ms };
	const char *url = ctl->o.alert_webhook;
	if (url && *url) {
		const char *host = strstr(url, "://");
		if (!host || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))) {
			free(f);
			return xp_errf(err, XP_EINVAL,
				       "--alert-webhook: expected an http:// or https:// URL, got '%s'",
				       url);
		}
		const char *slash = strchr(host + 3, '/');
		f->base = slash ? xstrndup(url, (size_t)(slash - url)) : xstrdup(url);
		f->path = xstrdup(slash ? slash : "/");
	}
	if (ctl->o.alert_starved_ms <= 0)
		ctl->o.alert_starved_ms = 600000;
	f->eng = xp_alerts_new(&o);
	f->names = xp_strtab_create();
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	ctl->alerts = f;
	if (f->base) {
		int rc = pthread_create(&f->thr, NULL, sender, f);
		if (rc)
			return xp_errf(err, -rc, "cannot start the alert sender");
		f->started = 1;
	}
	return 0;
}

void xp_alert_feed_stop(struct xp_ctl *ctl)
{
	struct xp_alert_feed *f = ctl->alerts;
	if (!f)
		return;
	if (f->started) {
		pthread_mutex_lock(&f->mu);
		f->stop = 1;
		pthread_cond_signal(&f->cv);
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->thr, NULL);
	}
	for (size_t i = 0; i < f->q.n; i++)
		free(f->q.v[i]);
	xp_vec_free(&f->q);
	xp_vec_free(&f->streak);
	xp_strtab_destroy(f->names);
	xp_alerts_free(f->eng);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	free(f->base);
	free(f->path);
	free(f);
	ctl->alerts = NULL;
}

void xp_alert_feed_stats(struct xp_ctl *ctl, struct xp_alert_stats *out)
{
	xp_alerts_get_stats(ctl->alerts->eng, out);
}

void xp_api_alerts(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_alert_feed *f = ctl->alerts;
	struct xp_alert_stats s;
	xp_alerts_get_stats(f->eng, &s);
	pthread_mutex_lock(&f->mu);
	uint64_t delivered = f->delivered, failed = f->failed, queued = f->q.n;
	pthread_mutex_unlock(&f->mu);
	json_t *o = json_pack("{s:o,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}}", "active",
			      xp_alerts_active(f->eng), "stats", "signals", (json_int_t)s.signals,
			      "duplicates", (json_int_t)s.duplicates, "flap_absorbed",
			      (json_int_t)s.flap_absorbed, "faults", (json_int_t)s.faults,
			      "notifications", (json_int_t)s.notifications, "delivered",
			      (json_int_t)delivered, "failed", (json_int_t)failed, "queued",
			      (json_int_t)queued);
	xp_reply_json(cmd, 200, xp_json_take(o));
}
