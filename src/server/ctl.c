/*
 * ctl: starting and stopping a controller.
 *
 * Start: open the store (which refuses a newer or damaged one; with
 * --recover it drops what is damaged instead, and what it dropped is
 * printed on stderr, one line each), replay the
 * newest snapshot and the journal after it through xp_rec_apply() - a
 * record that does not apply stops the start with its sequence number and
 * the reason, nothing is skipped - refill the event ring, reschedule the
 * completion of emulated tasks; on a fresh store write the bootstrap
 * records (tenant admin, queue default, an admin token whose secret goes to
 * DATA/admin.token, mode 0600); register the emulated nodes of --cluster
 * that are not registered yet; then start the owner thread and HTTP.
 * Stop: HTTP first (no new commands), then the owner (drains its queue),
 * then the store (flushes).
 */
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../descriptor/descriptor.h"
#include "../edge/edge.h"
#include "../lib/fileio.h"
#include "../lib/xalloc.h"

struct load_ctx {
	struct xp_ctl *ctl;
	struct xp_err *err;
	uint64_t records;
	int tokens; /* a token.* record went by */
};

static int on_snapshot(void *arg, uint64_t seq, const char *body, size_t len)
{
	struct load_ctx *lc = arg;
	int rc = xp_state_load_snapshot(lc->ctl->st, body, len, lc->err);
	if (rc < 0)
		xp_err_prefix(lc->err, "snapshot at seq %llu: ", (unsigned long long)seq);
	return rc;
}

static int on_record(void *arg, const struct xp_store_rec *r)
{
	struct load_ctx *lc = arg;
	struct xp_event_info ev;
	int rc = xp_rec_apply(lc->ctl->st, r->seq, r->at_ms, r->type, r->body, r->len, &ev,
				lc->err);
	if (rc < 0) {
		xp_err_prefix(lc->err, "does not apply: "); /* the store names the record */
		return rc;
	}
	xp_events_add(lc->ctl->ev, r->seq, ev.tenant, ev.type,
		      xp_event_json(lc->ctl, r->seq, r->at_ms, &ev));
	lc->records++;
	if (!strncmp(r->type, "token.", 6)) /* a follower's auth follows the leader's */
		lc->tokens = 1;
	if (!strncmp(r->type, "node.", 5))
		atomic_fetch_add(&lc->ctl->node_epoch, 1);
	return 0;
}

long xp_ctl_follow(struct xp_ctl *ctl, struct xp_err *err)
{
	struct load_ctx lc = { .ctl = ctl, .err = err };
	long n = xp_store_read(ctl->store, ctl->st->seq, 1000, on_record, &lc, err);
	if (n < 0)
		return n;
	atomic_store(&ctl->follow_ok_ms, xp_ctl_now());
	if (lc.tokens)
		xp_auth_refresh(ctl);
	if (n > 0) {
		xp_events_durable(ctl->ev, ctl->st->seq);
		xp_park_wake(ctl, XP_PARK_EVENTS);
	}
	return n;
}

/* --recover: each line of the store's report on stderr. */
static void print_recovered(const char *rep)
{
	while (rep && *rep) {
		size_t n = strcspn(rep, "\n");
		fprintf(stderr, "xpool server: --recover: %.*s\n", (int)n, rep);
		rep += n + (rep[n] == '\n');
	}
}

static int write_admin_token(const char *dir, const char *token, struct xp_err *err)
{
	char path[4096];
	struct xp_afile f;
	int rc;
	snprintf(path, sizeof(path), "%s/admin.token", dir);
	if ((rc = xp_afile_open_mode(&f, path, 0600, err)) < 0)
		return rc;
	fprintf(f.f, "%s\n", token);
	return xp_afile_commit(&f, err);
}

/* A fresh store's first records; the admin token goes to DATA/admin.token, and into
 * ctl->admin_token (the banner's) only when banner is set: a follower promoted later runs this
 * on the owner thread while the banner is being printed. */
static int bootstrap(struct xp_ctl *ctl, int banner, struct xp_err *err)
{
	char token[80], sha[65];
	int rc;
	if (ctl->st->tenants.n)
		return 0;
	if (xp_token_new("xpt", token, sha) < 0)
		return xp_errf(err, XP_EIO, "no randomness for the admin token");
	if ((rc = xp_ctl_journal(ctl, "tenant.create", xp_rec_tenant_create("admin"), err)) < 0 ||
	    (rc = xp_ctl_journal(ctl, "queue.create", xp_rec_queue_create("default", 0, 1), err)) <
		    0 ||
	    (rc = xp_ctl_journal(
		     ctl, "token.create",
		     xp_rec_token_create(1, "admin", "admin", XP_SCOPE_ADMIN, NULL, sha), err)) < 0)
		return rc;
	if ((rc = xp_store_sync(ctl->store)) < 0)
		return xp_errf(err, rc, "the journal could not be written");
	if ((rc = write_admin_token(ctl->o.data, token, err)) < 0)
		return rc;
	if (banner)
		snprintf(ctl->admin_token, sizeof(ctl->admin_token), "%s", token);
	return 0;
}

int xp_ctl_add_node(struct xp_ctl *ctl, const struct xp_cluster *c, const struct xp_node *node,
		    int source, struct xp_err *err)
{
	struct xp_cluster *one = xp_cluster_create();
	struct xp_node *n = xp_cluster_copy_node(one, c, node, NULL);
	xp_oc_rules_apply(&ctl->oc, one, n);
	char *d = xp_descriptor_to_json(one);
	xp_cluster_destroy(one);
	int rc = xp_ctl_journal(ctl, "node.add", xp_rec_node_add(source, d), err);
	free(d);
	return rc;
}

static int register_cluster(struct xp_ctl *ctl, struct xp_err *err)
{
	struct xp_cluster *c;
	int rc = 0;
	if (!ctl->o.cluster)
		return 0;
	c = xp_descriptor_load_file(ctl->o.cluster, err);
	if (!c)
		return err->code;
	for (size_t i = 0; rc == 0 && i < c->nnodes; i++) {
		if (xp_state_node(ctl->st, c->nodes[i].name) >= 0)
			continue; /* registered by an earlier start */
		rc = xp_ctl_add_node(ctl, c, &c->nodes[i], XP_SRC_EMULATED, err);
	}
	xp_cluster_destroy(c);
	if (rc == 0 && (rc = xp_store_sync(ctl->store)) < 0)
		xp_errf(err, rc, "the journal could not be written");
	return rc;
}

/* What a start does after the replay, and a follower when it becomes the leader. */
static void after_load(struct xp_ctl *ctl)
{
	for (size_t i = 0; i < ctl->st->jobs.n; i++)
		xp_emu_schedule(ctl, ctl->st->jobs.v[i]);
	xp_auth_refresh(ctl);
	/* agent nodes get a full lost period to speak after a controller restart */
	for (size_t n = 0; n < ctl->st->nodes.n; n++) {
		xp_watch_bump(ctl, (uint32_t)n);
		ctl->live.v[n].last_seen = xp_ctl_now();
	}
}

/* The campaign won (on its thread): the owner promotes at its next turn. */
static void on_lead(void *arg)
{
	struct xp_ctl *ctl = arg;
	atomic_store(&ctl->lead_won, 1);
	pthread_mutex_lock(&ctl->qmu);
	pthread_cond_signal(&ctl->qcv);
	pthread_mutex_unlock(&ctl->qmu);
}

int xp_ctl_promote(struct xp_ctl *ctl, struct xp_err *err)
{
	long n;
	int rc;
	/* the old leader can write no more (its guard fails): read to the end */
	while ((n = xp_ctl_follow(ctl, err)) > 0)
		;
	if (n < 0)
		return (int)n;
	if ((rc = xp_store_promote(ctl->store, ctl->st->seq, err)) < 0)
		return rc;
	atomic_store(&ctl->follower, 0);
	after_load(ctl);
	if ((rc = bootstrap(ctl, 0, err)) < 0 || (rc = register_cluster(ctl, err)) < 0)
		return rc;
	fprintf(stderr, "xpool server: leading at epoch %lld, seq %llu\n",
		(long long)xp_store_epoch(ctl->store), (unsigned long long)ctl->st->seq);
	return 0;
}

int xp_ctl_start(const struct xp_ctl_opts *o, struct xp_ctl **out, struct xp_err *err)
{
	struct xp_ctl *ctl = XNEW(struct xp_ctl);
	struct xp_state_opts so = { .docs = &xp_edge_docs };
	struct xp_store_opts sto = { 0 };
	struct load_ctx lc = { .ctl = ctl, .err = err };
	int rc;

	ctl->o = *o;
	/* the controller keeps its own copies: the caller's strings may go */
	ctl->o.data = ctl->own[0] = o->data ? xstrdup(o->data) : NULL;
	ctl->o.listen = ctl->own[1] = xstrdup(o->listen ? o->listen : "127.0.0.1:7700");
	ctl->o.cluster = ctl->own[2] = o->cluster ? xstrdup(o->cluster) : NULL;
	ctl->o.policy = ctl->own[3] = o->policy ? xstrdup(o->policy) : NULL;
	ctl->o.store_vfs = ctl->own[4] = o->store_vfs ? xstrdup(o->store_vfs) : NULL;
	ctl->o.store = ctl->own[6] = o->store ? xstrdup(o->store) : NULL;
	ctl->o.advertise = ctl->own[7] = o->advertise ? xstrdup(o->advertise) : NULL;
	ctl->o.etcd_ca = ctl->own[8] = o->etcd_ca ? xstrdup(o->etcd_ca) : NULL;
	ctl->o.etcd_cert = ctl->own[9] = o->etcd_cert ? xstrdup(o->etcd_cert) : NULL;
	ctl->o.etcd_key = ctl->own[10] = o->etcd_key ? xstrdup(o->etcd_key) : NULL;
	ctl->o.overcommit_memory = ctl->own[5] =
		o->overcommit_memory ? xstrdup(o->overcommit_memory) : NULL;
	if (!ctl->o.body_limit)
		ctl->o.body_limit = ctl->o.store ? XP_CTL_ETCD_BODY_MAX : 1 << 20;
	if (ctl->o.tick_ms <= 0)
		ctl->o.tick_ms = 50;
	if (!ctl->o.max_per_cycle)
		ctl->o.max_per_cycle = 2000;
	if (!ctl->o.snapshot_every)
		ctl->o.snapshot_every = 20000;
	if (!ctl->o.max_connections) /* agents hold one each (a long poll) */
		ctl->o.max_connections = 16384;
	if (!ctl->o.max_strangers)
		ctl->o.max_strangers = 64;
	if (ctl->o.header_timeout_ms <= 0)
		ctl->o.header_timeout_ms = 30000;
	if (ctl->o.heartbeat_ms <= 0)
		ctl->o.heartbeat_ms = 5000;
	if (ctl->o.suspect_beats <= 0)
		ctl->o.suspect_beats = 3;
	if (ctl->o.lost_ms <= 0)
		ctl->o.lost_ms = 40000;
	if (ctl->o.keep_finished_ms <= 0)
		ctl->o.keep_finished_ms = 24LL * 3600 * 1000;
	if (!ctl->o.max_finished)
		ctl->o.max_finished = 100000;
	pthread_mutex_init(&ctl->qmu, NULL);
	pthread_cond_init(&ctl->qcv, NULL);
	pthread_mutex_init(&ctl->http_mu, NULL);
	pthread_cond_init(&ctl->http_cv, NULL);
	pthread_mutex_init(&ctl->m.mu, NULL);
	pthread_mutex_init(&ctl->mx.mu, NULL);
	pthread_cond_init(&ctl->mx.cv, NULL);
	pthread_rwlock_init(&ctl->auth_lock, NULL);
	pthread_mutex_init(&ctl->watch_mu, NULL);
	pthread_mutex_init(&ctl->ep_mu, NULL);
	pthread_mutex_init(&ctl->acct.mu, NULL);
	xp_rng_seed(&ctl->rng, (uint64_t)xp_ctl_now());
	ctl->ev = xp_events_create(ctl->o.event_ring);
	so.policy = ctl->o.policy;
	so.batch.budget = ctl->o.optimise ? 1 : 0; /* set before each call (optimise.c) */
	memcpy(so.weights, ctl->o.weights, sizeof(so.weights));
	if (ctl->o.overcommit_memory &&
	    (rc = xp_oc_rules_parse(ctl->o.overcommit_memory, &ctl->oc, err)) < 0) {
		char why[sizeof(err->text)];
		snprintf(why, sizeof(why), "%s", err->text);
		xp_errf(err, rc, "--overcommit-memory: %s", why);
		goto fail;
	}
	ctl->st = xp_state_create(&so, err);
	if (!ctl->st) {
		rc = err->code;
		goto fail;
	}
	sto.sync = ctl->o.sync;
	sto.recover = ctl->o.recover;
	sto.vfs = ctl->o.store_vfs;
	sto.etcd = ctl->o.store;
	sto.etcd_ca = ctl->o.etcd_ca;
	sto.etcd_cert = ctl->o.etcd_cert;
	sto.etcd_key = ctl->o.etcd_key;
	sto.lease_ms = ctl->o.lease_ms;
	sto.advertise = ctl->o.advertise;
	sto.standby = ctl->o.standby;
	sto.standby_arg = ctl->o.standby_arg;
	sto.follow = ctl->o.store != NULL; /* lead only after replaying, from the owner */
	sto.on_lead = on_lead;
	sto.lead_arg = ctl;
	atomic_store(&ctl->follower, sto.follow);
	if ((rc = xp_store_open(ctl->o.data, &sto, &ctl->store, err)) < 0)
		goto fail;
	print_recovered(xp_store_recovered(ctl->store));
	if ((rc = xp_store_load(ctl->store, on_snapshot, on_record, &lc, err)) < 0)
		goto fail;
	xp_events_durable(ctl->ev, atomic_load(&ctl->follower) ? ctl->st->seq
							       : xp_store_durable_seq(ctl->store));
	atomic_store(&ctl->follow_ok_ms, xp_ctl_now());
	if (!atomic_load(&ctl->follower) &&
	    ((rc = bootstrap(ctl, 1, err)) < 0 || (rc = register_cluster(ctl, err)) < 0))
		goto fail;
	if ((rc = xp_state_check(ctl->st, err)) < 0)
		goto fail;
	after_load(ctl);
#ifdef __GLIBC__
	/* The replay parses the snapshot and records into JSON trees and frees
	 * them, but glibc keeps the freed pages: at 10,000 nodes and 100,000
	 * jobs a restarted controller held 843 MiB, 190 MiB once trimmed
	 * (docs/results/scale.md). Give them back once, here. */
	malloc_trim(0);
#endif
	ctl->start_nodes = ctl->st->c->nnodes;
	ctl->start_jobs = ctl->st->jobs.n;
	if ((rc = xp_alert_feed_start(ctl, err)) < 0 || (rc = xp_owner_start(ctl, err)) < 0 ||
	    (rc = xp_http_start(ctl, err)) < 0)
		goto fail;
	ctl->ready = 1;
	*out = ctl;
	return 0;
fail:
	xp_ctl_stop(ctl);
	return rc;
}

void xp_ctl_stop(struct xp_ctl *ctl)
{
	if (!ctl)
		return;
	ctl->ready = 0;
	if (ctl->ev)
		xp_events_stop(ctl->ev);
	xp_http_stop(ctl);
	xp_owner_stop(ctl);
	xp_alert_feed_stop(ctl);
	xp_history_free(ctl);
	xp_store_close(ctl->store);
	xp_park_destroy(ctl); /* no thread wakes a key any more */
	xp_state_destroy(ctl->st);
	xp_events_destroy(ctl->ev);
	xp_due_free(&ctl->emu);
	pthread_mutex_destroy(&ctl->qmu);
	pthread_cond_destroy(&ctl->qcv);
	pthread_mutex_destroy(&ctl->http_mu);
	pthread_cond_destroy(&ctl->http_cv);
	pthread_mutex_destroy(&ctl->m.mu);
	xp_metrics_pub_destroy(&ctl->mx);
	pthread_mutex_destroy(&ctl->mx.mu);
	pthread_cond_destroy(&ctl->mx.cv);
	pthread_rwlock_destroy(&ctl->auth_lock);
	for (size_t i = 0; i < ctl->live.n; i++) {
		free(ctl->live.v[i].dev);
		free(ctl->live.v[i].mig);
	}
	xp_vec_free(&ctl->live);
	for (size_t i = 0; i < ctl->energy.cap; i++)
		if (ctl->energy.keys && ctl->energy.keys[i])
			free(ctl->energy.vals[i]);
	xp_intmap_free(&ctl->energy);
	for (size_t i = 0; i < ctl->gpu_use.cap; i++)
		if (ctl->gpu_use.keys && ctl->gpu_use.keys[i])
			free(ctl->gpu_use.vals[i]);
	xp_intmap_free(&ctl->gpu_use);
	xp_svc_live_free(ctl);
	xp_scalers_free(ctl);
	xp_vec_free(&ctl->assign_ver);
	pthread_mutex_destroy(&ctl->watch_mu);
	pthread_mutex_destroy(&ctl->ep_mu);
	pthread_mutex_destroy(&ctl->acct.mu);
	xp_http_acct_free(&ctl->acct);
	free(ctl->auth);
	for (size_t i = 0; i < sizeof(ctl->own) / sizeof(ctl->own[0]); i++)
		free(ctl->own[i]);
	free(ctl);
}
