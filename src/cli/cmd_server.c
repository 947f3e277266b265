/*
 * cmd_server: `xpool server` (a controller on a data directory) and
 * `xpool dev` (a controller on a fresh directory with emulated nodes from a
 * cluster descriptor, printing its address and admin token). Both serve
 * until SIGINT or SIGTERM, then stop in order: HTTP, owner, store - or
 * until the journal fails (disk full, I/O error): then they stop the same
 * way at once and exit 1 (fail-stop, docs/design/controller.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../agent/cgroup.h"
#include "../client/client.h"
#include "../core/sched/policy.h"
#include "../descriptor/tree.h"
#include "../lib/fileio.h"
#include "../lib/parse.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"
#include "../server/ctl.h"
#include "cli.h"
#include "flags.h"

/* --config FILE: YAML (or JSON) with the flags' names as keys */
static int load_config(const char *path, struct xp_flag *flags, struct xp_err *err)
{
	static const char *const keys[] = { "data",
					    "listen",
					    "policy",
					    "body-limit",
					    "tick",
					    "max-per-cycle",
					    "snapshot-every",
					    "event-ring",
					    "max-connections",
					    "max-strangers",
					    "heartbeat",
					    "suspect-after",
					    "lost-after",
					    "keep-finished",
					    "max-finished",
					    "weights",
					    "alert-webhook",
					    "alert-group-wait",
					    "alert-interval",
					    "alert-repeat",
					    "alert-starved",
					    "overcommit-memory",
					    "tls-cert",
					    "tls-key",
					    "store",
					    "lease",
					    "advertise",
					    "etcd-ca",
					    "etcd-cert",
					    "etcd-key",
					    "optimise",
					    "budget",
					    NULL };
	struct xp_tree *t = NULL;
	char *buf;
	size_t len;
	struct xp_walk w = { .name = path, .err = err };
	int rc = xp_tree_read_file(path, &buf, &len, err);
	if (rc < 0)
		return rc;
	rc = xp_tree_parse(path, buf, len, -1, &t, err);
	free(buf);
	if (rc < 0)
		return rc;
	if (t && (rc = xp_walk_want(&w, t, XP_TREE_MAP, "a map of settings")) == 0)
		rc = xp_walk_keys(&w, t, keys);
	for (size_t i = 0; rc == 0 && t && i < t->n; i++) {
		const char *v;
		size_t m = xp_walk_push_key(&w, t->keys[i]);
		rc = xp_walk_str(&w, t->kids[i], 4096, &v);
		xp_walk_pop(&w, m);
		struct xp_flag *f = xp_flag_get(flags, t->keys[i]);
		if (rc == 0 && f && !f->given) { /* flags win over the file */
			f->sval = xstrdup(v);
			f->given = 1;
		}
	}
	xp_tree_destroy(t);
	return rc;
}

static int size_flag(struct xp_flag *flags, const char *name, long min, long max, size_t *out,
		     struct xp_err *err)
{
	struct xp_flag *f = xp_flag_get(flags, name);
	long v;
	if (!f->sval)
		return 0;
	if (xp_parse_int_flag(name, f->sval, min, max, &v, err) < 0)
		return XP_EINVAL;
	*out = (size_t)v;
	return 0;
}

/* xpool dev: one real agent for this machine, `xpool agent` run from this
 * very binary, so the first job of a newcomer really runs here. It ends
 * its tasks when it stops (--stop-tasks): dev leaves nothing behind.
 * Limits: where this machine's cgroups take them (root, a writable
 * /sys/fs/cgroup, v1 or v2) the agent enforces them like any agent; where
 * they do not (no root, a read-only cgroupfs in a container) dev says so
 * in one line and starts it with --no-limits, so a newcomer's first job
 * still runs; the node's label limits=off says it too. */
/* The host agent joins as agents elsewhere do: with a bootstrap token
 * (DATA/bootstrap.token, 0600, made once through the API with the admin
 * token) that it trades for its node's credential. 0, or -1 when it could
 * not be made (the agent then gets the admin token, as before scopes). */
static int bootstrap_token(struct xp_ctl *ctl, const char *base, const char *ca, const char *data,
			   char *path, size_t len)
{
	char adm[4200], *tok = NULL;
	size_t n = 0;
	struct xp_err err = { 0 };
	struct xp_afile af = { 0 };
	json_t *reply = NULL;
	snprintf(path, len, "%s/bootstrap.token", data);
	if (access(path, R_OK) == 0)
		return 0;
	snprintf(adm, sizeof(adm), "%s/admin.token", data);
	if (xp_read_file(adm, 4096, &tok, &n, &err) < 0)
		return -1;
	tok[strcspn(tok, "\r\n")] = '\0';
	struct xp_client *cl = xp_client_create(base, tok, &err);
	if (cl && xp_client_set_ca(cl, ca, &err) < 0) {
		xp_client_destroy(cl);
		cl = NULL;
	}
	free(tok);
	json_t *body = json_pack("{s:s,s:s,s:s}", "tenant", "admin", "name", "agents", "scope",
				 "bootstrap");
	int rc = cl ? xp_client_json(cl, "POST", "/v1/tokens", body, &reply, &err) : -1;
	const char *secret = json_string_value(json_object_get(reply, "token"));
	if (rc >= 0 && secret && xp_afile_open_mode(&af, path, 0600, &err) == 0) {
		fprintf(af.f, "%s\n", secret);
		rc = xp_afile_commit(&af, &err);
	} else {
		rc = -1;
	}
	if (rc < 0)
		fprintf(stderr,
			"xpool dev: no bootstrap token for the local agent (%s); it gets "
			"the admin token\n",
			err.text[0] ? err.text : "no secret in the reply");
	json_decref(body);
	json_decref(reply);
	if (cl)
		xp_client_destroy(cl);
	return rc < 0 ? -1 : 0;
}

/* The URL this machine reaches the controller at: the wildcard is no
 * address to reach, nor a name in dev's certificate */
static void reach_url(const struct xp_ctl *ctl, int https, char *buf, size_t len)
{
	const char *a = ctl->addr;
	if (!strncmp(a, "0.0.0.0:", 8))
		snprintf(buf, len, "%s://127.0.0.1%s", https ? "https" : "http", a + 7);
	else
		snprintf(buf, len, "%s://%s", https ? "https" : "http", a);
}

static pid_t start_local_agent(struct xp_ctl *ctl, const char *data, const char *ca,
			       const sigset_t *blocked)
{
	char exe[4096], addr[128], work[4200], tokfile[4200];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "xpool dev: no local agent: cannot find this binary: %s\n",
			strerror(errno));
		return -1;
	}
	exe[n] = '\0';
	reach_url(ctl, ca != NULL, addr, sizeof(addr));
	snprintf(work, sizeof(work), "%s/agent", data);
	/* the token from its file (mode 0600), never on a command line ps shows */
	if (bootstrap_token(ctl, addr, ca, data, tokfile, sizeof(tokfile)) < 0)
		snprintf(tokfile, sizeof(tokfile), "%s/admin.token", data);
	/* --dedicated: emulated jobs never land on the real host; a job that
	 * names it (--node HOST) does */
	char why[300];
	int layout = xp_cg_probe("/sys/fs/cgroup", why, sizeof(why));
	char *argv[16] = { exe,	    "agent",  "--server", addr,		  "--token-file",
			   tokfile, "--work", work,	  "--stop-tasks", "--dedicated" };
	int argc = 10;
	if (!layout)
		argv[argc++] = "--no-limits";
	if (ca) { /* https: the dev CA */
		argv[argc++] = "--ca";
		argv[argc++] = (char *)ca;
	}
	argv[argc] = NULL;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		/* dies with dev, even if dev is killed without a chance to stop it */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(0);
		pthread_sigmask(SIG_UNBLOCK, blocked, NULL);
		/* its lines go to DATA/agent.log: the terminal keeps dev's */
		char logp[4300];
		snprintf(logp, sizeof(logp), "%s/agent.log", data);
		int lfd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (lfd >= 0) {
			dup2(lfd, 1);
			dup2(lfd, 2);
		}
		execv(exe, argv);
		_exit(127);
	}
	if (pid < 0) {
		fprintf(stderr, "xpool dev: no local agent: fork: %s\n", strerror(errno));
		return -1;
	}
	printf("local agent: pid %d, work %s, log %s/agent.log (--no-agent to leave it out)\n",
	       (int)pid, work, data);
	if (layout)
		printf("local agent: CPU and memory limits: cgroup v%d at /sys/fs/cgroup\n",
		       layout);
	else
		printf("local agent: CPU and memory limits off (its tasks run unbounded): %s\n",
		       why);
	return pid;
}

/* dev --tls: DATA/client.config, a client config (client.h) for this
 * controller - its https:// address, the admin token's file and the CA -
 * to copy to ~/.config/xpool/config; a line says where it is. */
static void dev_client_config(const char *data, const struct xp_ctl *ctl, const char *ca)
{
	char path[4200], url[128];
	struct xp_afile af = { 0 };
	struct xp_err err = { 0 };
	snprintf(path, sizeof(path), "%s/client.config", data);
	if (xp_afile_open_mode(&af, path, 0600, &err) == 0) {
		fprintf(af.f, "# xpool dev --tls: copy to ~/.config/xpool/config\n");
		reach_url(ctl, 1, url, sizeof(url));
		fprintf(af.f, "addr: %s\ntoken_file: admin.token\nca: %s\n", url,
			ca + strlen(data) + 1);
		xp_afile_commit(&af, &err);
	}
	if (err.text[0])
		fprintf(stderr, "xpool dev: no client config: %s\n", err.text);
	else
		printf("client config: %s (https, the CA %s)\n", path, ca);
}

/* dev --tls: DATA/tls made (or kept), o's certificate and key pointed there */
static int dev_tls(struct xp_ctl_opts *o, struct xp_tls_files *tf, struct xp_err *err)
{
	char host[256];
	const char *colon = strrchr(o->listen, ':');
	snprintf(host, sizeof(host), "%.*s", colon ? (int)(colon - o->listen) : 0, o->listen);
	if (xp_tls_dev_files(o->data, host, tf, err) < 0) {
		xp_err_prefix(err, "--tls: ");
		return err->code;
	}
	o->tls_cert = tf->cert;
	o->tls_key = tf->key;
	return 0;
}

/* The owner thread's word that the journal failed: wake the main thread's sigwait. */
static void on_fatal(void *arg)
{
	(void)arg;
	kill(getpid(), SIGUSR1);
}

/* --store etcd://: while another controller leads, say so when the leader changes, and give
 * up on SIGINT or SIGTERM (blocked in every thread, so they wait as pending signals). */
static int standby(void *arg, const char *leader, const char *why)
{
	char *last = arg;
	sigset_t pend;
	if (leader && strcmp(leader, last)) {
		fprintf(stderr, "xpool server: standby: the leader is %s\n",
			leader[0] ? leader : "(no address)");
		snprintf(last, 256, "%s", leader);
	} else if (!leader && why && (last[0] != '\1' || strcmp(last + 1, why))) {
		fprintf(stderr, "xpool server: waiting for etcd: %s\n", why);
		snprintf(last, 256, "\1%s", why); /* said once until it changes */
	}
	sigpending(&pend);
	return sigismember(&pend, SIGINT) || sigismember(&pend, SIGTERM);
}

/* Wait for SIGINT or SIGTERM, or SIGUSR1 from on_fatal (a stray one is ignored); say why we
 * stop. 1 when the journal failed. */
static int wait_for_stop(const char *verb, struct xp_ctl *ctl, const sigset_t *set)
{
	struct xp_err err = { 0 };
	int sig;
	for (;;) {
		sigwait(set, &sig);
		if (sig != SIGUSR1 || xp_store_failure(ctl->store, &err) < 0 ||
		    atomic_load(&ctl->restart))
			break;
	}
	if (sig == SIGUSR1 && atomic_load(&ctl->restart)) {
		fprintf(stderr, "xpool %s: starting again from the store\n", verb);
		return 1;
	}
	if (sig == SIGUSR1) {
		fprintf(stderr, "xpool %s: stopping, exit 1: the journal failed: %s\n", verb,
			err.text);
		return 1;
	}
	fprintf(stderr, "xpool %s: stopping (signal %d)\n", verb, sig);
	return 0;
}

/* The banner, what to do next last (the export line, the dashboard); xpool dev's local agent
 * started before it (its pid, or -1). */
static pid_t announce(struct xp_ctl *ctl, const struct xp_ctl_opts *o, int dev, int local_agent,
		      const char *ca, const sigset_t *set)
{
	/* what to do next comes last: the export line and the dashboard */
	printf("data: %s\n", o->data);
	if (o->store) /* the owner takes the lead when the campaign wins ("leading at epoch") */
		fprintf(stderr, "xpool server: following %s, campaigning\n", o->store);
	fflush(stdout);
	pid_t agent = -1;
	if (local_agent)
		agent = start_local_agent(ctl, o->data, ca, set);
	const char *scheme = o->tls_cert ? "https" : "http";
	printf("serving until interrupted (%zu nodes, %zu jobs)\n", ctl->start_nodes,
	       ctl->start_jobs);
	printf("address: %s://%s\n", scheme, ctl->addr);
	if (ctl->admin_token[0])
		printf("admin token: %s\n", ctl->admin_token);
	else
		printf("admin token: in %s/admin.token\n", o->data);
	if (ca)
		dev_client_config(o->data, ctl, ca);
	if (dev && ctl->admin_token[0]) {
		char url[128];
		reach_url(ctl, 1, url, sizeof(url));
		printf("  export XPOOL_ADDR=%s XPOOL_TOKEN=%s%s%s\n", ca ? url : ctl->addr,
		       ctl->admin_token, ca ? " XPOOL_CA=" : "", ca ? ca : "");
		printf("dashboard: %s://%s/ui#token=%s\n", scheme, ctl->addr, ctl->admin_token);
	} else {
		printf("dashboard: %s://%s/ui\n", scheme, ctl->addr);
	}
	fflush(stdout);
	return agent;
}

/* the durations and counts of liveness, alerts, forgetting and the tick into o; -1 with err naming the flag */
static int time_flags(struct xp_flag *flags, struct xp_ctl_opts *o, struct xp_err *err)
{
	const struct {
		const char *flag;
		int64_t min, max;
		int *out;
	} durs[] = { { "heartbeat", 10, 600000, &o->heartbeat_ms },
		     { "lost-after", 100, 3600000, &o->lost_ms },
		     { "alert-group-wait", 1, 3600000, &o->alert_group_wait_ms },
		     { "alert-interval", 1, 86400000, &o->alert_interval_ms },
		     { "alert-repeat", 1000, 604800000, &o->alert_repeat_ms },
		     { "alert-starved", 1000, 604800000, &o->alert_starved_ms } };
	for (size_t i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
		const char *v = xp_flag_get(flags, durs[i].flag)->sval;
		int64_t ms;
		if (!v)
			continue;
		if (xp_duration_parse(v, durs[i].max, &ms) < 0 || ms < durs[i].min) {
			xp_errf(err, XP_EINVAL,
				"--%s: expected a duration %lldms..%llds, got '%s'", durs[i].flag,
				(long long)durs[i].min, (long long)durs[i].max / 1000, v);
			return -1;
		}
		*durs[i].out = (int)ms;
	}
	if (xp_flag_get(flags, "keep-finished")->sval) {
		int64_t ms;
		const char *v = xp_flag_get(flags, "keep-finished")->sval;
		if (xp_duration_parse(v, 3650LL * 86400 * 1000, &ms) < 0 || ms < 1000) {
			xp_errf(err, XP_EINVAL,
				"--keep-finished: expected a duration 1s..3650d, got '%s'", v);
			return -1;
		}
		o->keep_finished_ms = ms;
	}
	size_t maxfin = 0;
	if (size_flag(flags, "max-finished", 1, 100000000, &maxfin, err) < 0)
		return -1;
	o->max_finished = maxfin;
	if (xp_flag_get(flags, "suspect-after")->sval) {
		long v;
		if (xp_parse_int_flag("suspect-after", xp_flag_get(flags, "suspect-after")->sval, 1,
				      1000, &v, err) < 0)
			return -1;
		o->suspect_beats = (int)v;
	}
	if (o->lost_ms && o->lost_ms <= (o->heartbeat_ms ? o->heartbeat_ms : 5000)) {
		xp_errf(err, XP_EINVAL, "--lost-after must be longer than --heartbeat");
		return -1;
	}
	if (xp_flag_get(flags, "tick")->sval) {
		int64_t ms;
		if (xp_duration_parse(xp_flag_get(flags, "tick")->sval, 60000, &ms) < 0 || ms < 1) {
			xp_errf(err, XP_EINVAL, "--tick: expected a duration 1ms..60s, got '%s'",
				xp_flag_get(flags, "tick")->sval);
			return -1;
		}
		o->tick_ms = (int)ms;
	}
	return 0;
}

/* the size limits into o; -1 with err naming the flag */
static int size_flags(struct xp_flag *flags, struct xp_ctl_opts *o, struct xp_err *err)
{
	size_t snap = 0;
	if (size_flag(flags, "body-limit", 1024, 1L << 30, &o->body_limit, err) < 0 ||
	    size_flag(flags, "max-per-cycle", 1, 1000000, &o->max_per_cycle, err) < 0 ||
	    size_flag(flags, "snapshot-every", 1, 100000000, &snap, err) < 0 ||
	    size_flag(flags, "event-ring", 16, 100000000, &o->event_ring, err) < 0 ||
	    size_flag(flags, "max-connections", 1, 1000000, &o->max_connections, err) < 0 ||
	    size_flag(flags, "max-strangers", 1, 100000, &o->max_strangers, err) < 0)
		return -1;
	o->snapshot_every = snap;
	return 0;
}

/* --store, --etcd-ca/-cert/-key and --lease into o (xpool dev keeps SQLite); -1 with err naming the flag */
static int store_flags(struct xp_flag *flags, int dev, struct xp_ctl_opts *o, struct xp_err *err)
{
	o->store = xp_flag_get(flags, "store")->sval;
	if (o->store && dev) {
		xp_errf(err, XP_EINVAL, "--store: xpool dev keeps its journal in SQLite");
		return -1;
	}
	if (o->store && strncmp(o->store, "etcd://", 7) && strncmp(o->store, "etcds://", 8)) {
		xp_errf(err, XP_EINVAL,
			"--store: expected etcd://HOST:PORT[,...] or etcds://..., got '%s'", o->store);
		return -1;
	}
	if (o->store && o->body_limit > XP_CTL_ETCD_BODY_MAX)
		return xp_errf(err, XP_EINVAL,
			       "--body-limit: at most %d bytes with --store etcd (etcd takes 1.5 MiB a "
			       "request), got %zu",
			       XP_CTL_ETCD_BODY_MAX, o->body_limit);
	o->etcd_ca = xp_flag_get(flags, "etcd-ca")->sval;
	o->etcd_cert = xp_flag_get(flags, "etcd-cert")->sval;
	o->etcd_key = xp_flag_get(flags, "etcd-key")->sval;
	int tls = o->store && !strncmp(o->store, "etcds://", 8);
	const char *which = o->etcd_ca ? "--etcd-ca" : o->etcd_cert ? "--etcd-cert" : "--etcd-key";
	if ((o->etcd_ca || o->etcd_cert || o->etcd_key) && !tls)
		return xp_errf(err, XP_EINVAL, "%s goes with --store etcds://", which);
	if (!o->etcd_cert != !o->etcd_key)
		return xp_errf(err, XP_EINVAL, "--etcd-cert and --etcd-key go together");
	if (xp_flag_get(flags, "lease")->sval) {
		int64_t ms;
		if (xp_duration_parse(xp_flag_get(flags, "lease")->sval, 600000, &ms) < 0 ||
		    ms < 2000) {
			xp_errf(err, XP_EINVAL, "--lease: expected a duration 2s..600s, got '%s'",
				xp_flag_get(flags, "lease")->sval);
			return -1;
		}
		o->lease_ms = (int)ms;
	}
	return 0;
}

/* --optimise and --budget into o (and the policy: mcts is xpool's score
 * with the search); -1 with err naming the flag */
static int optimise_flags(struct xp_flag *flags, struct xp_ctl_opts *o, struct xp_err *err)
{
	const char *opt = xp_flag_get(flags, "optimise")->sval;
	const char *b = xp_flag_get(flags, "budget")->sval;
	struct xp_flag *pol = xp_flag_get(flags, "policy");
	if (opt && strcmp(opt, "mcts") && strcmp(opt, "none"))
		return xp_errf(err, XP_EINVAL, "--optimise: expected mcts or none, got '%s'", opt);
	o->optimise = opt ? !strcmp(opt, "mcts") : !strcmp(o->policy, "mcts");
	if (o->optimise && pol->given && strcmp(o->policy, "xpool") && strcmp(o->policy, "mcts"))
		return xp_errf(err, XP_EINVAL,
			       "--optimise mcts: the search scores with xpool's policy; --policy "
			       "%s has no batch optimiser (give --policy xpool, or none)",
			       o->policy);
	if (o->optimise)
		o->policy = "mcts";
	else if (!strcmp(o->policy, "mcts"))
		o->policy = "xpool"; /* --optimise none: the same decisions, no search */
	if (b && !o->optimise)
		return xp_errf(err, XP_EINVAL, "--budget: goes with --optimise mcts");
	o->budget_rollouts = XP_BATCH_BUDGET_DEFAULT;
	if (!b)
		return 0;
	long n;
	int64_t ms;
	if (b[0] >= '0' && b[0] <= '9' && b[strspn(b, "0123456789")] == '\0') {
		if (xp_parse_int_flag("budget", b, 0, 100000, &n, err) < 0)
			return XP_EINVAL;
		o->budget_rollouts = (uint32_t)n;
		return 0;
	}
	if (xp_duration_parse(b, 10000, &ms) < 0 || ms < 1)
		return xp_errf(err, XP_EINVAL,
			       "--budget: expected rollouts per search (0..100000) or a time per "
			       "cycle call 1ms..10s (10ms), got '%s'",
			       b);
	o->budget_us = ms * 1000;
	return 0;
}

/* --policy, --weights, --optimise and --budget into o; -1 with err naming the flag */
static int policy_flags(struct xp_flag *flags, struct xp_ctl_opts *o, struct xp_err *err)
{
	if (!xp_policy_find(o->policy))
		return xp_errf(err, XP_EINVAL, "--policy: unknown policy '%s'", o->policy);
	if (optimise_flags(flags, o, err) < 0)
		return -1;
	if (xp_flag_get(flags, "weights")->given &&
	    xp_weights_parse(xp_flag_get(flags, "weights")->sval, o->weights, err) < 0) {
		xp_err_prefix(err, "--weights: ");
		return -1;
	}
	return 0;
}

/* The flags of xpool server and xpool dev (serve() copies them). */
static const struct xp_flag server_flags[] = {
	{ "data", XP_FLAG_STR, "DIR", "data directory (required)" }, /* dev: see serve */
	{ "listen", XP_FLAG_STR, "HOST:PORT",
	  "address to serve on; port 0 picks a free one" },
	{ "config", XP_FLAG_STR, "FILE", "YAML settings with these flags' names as keys" },
	{ "cluster", XP_FLAG_STR, "FILE",
	  "cluster descriptor of emulated nodes to register" },
	{ "policy", XP_FLAG_STR, "P", "placement policy (see xpool sim openb --help)" },
	{ "optimise", XP_FLAG_STR, "mcts|none",
	  "mcts: the cycle plans the next pending jobs together by tree search over "
	  "xpool's score (the policy becomes mcts; docs/design/batch-cycle.md)" },
	{ "budget", XP_FLAG_STR, "N|TIME",
	  "--optimise mcts: N rollouts per search (default " XP_BATCH_BUDGET_DEFAULT_STR
	  "), or the search time of one cycle call, 1ms..10s (10ms), turned into "
	  "rollouts by measuring the last calls" },
	{ "weights", XP_FLAG_STR, "F=W,...",
	  "--policy weighted: factor weights, of priority, affinity, energy, network, "
	  "health "
	  "(default 0.3,0.25,0.2,0.15,0.1)" },
	{ "body-limit", XP_FLAG_STR, "BYTES", "largest request body" },
	{ "tick", XP_FLAG_STR, "DURATION", "scheduling timer" },
	{ "max-per-cycle", XP_FLAG_STR, "N", "placement attempts per cycle step" },
	{ "snapshot-every", XP_FLAG_STR, "N", "journal records between snapshots" },
	{ "event-ring", XP_FLAG_STR, "N", "events kept in memory for resuming watchers" },
	{ "max-connections", XP_FLAG_STR, "N", "concurrent HTTP connections" },
	{ "max-strangers", XP_FLAG_STR, "N",
	  "connections one address may hold before their request is admitted (a token "
	  "checked), default 64: more are closed at accept" },
	{ "heartbeat", XP_FLAG_STR, "DURATION", "agents' heartbeat period (default 5s)" },
	{ "suspect-after", XP_FLAG_STR, "N",
	  "missed heartbeats before a node is suspect (3)" },
	{ "lost-after", XP_FLAG_STR, "DURATION",
	  "silence before an agent's node is lost and its jobs requeue (40s)" },
	{ "keep-finished", XP_FLAG_STR, "DURATION",
	  "finished jobs are forgotten after this (24h)" },
	{ "max-finished", XP_FLAG_STR, "N", "and beyond this many, oldest first (100000)" },
	{ "alert-webhook", XP_FLAG_STR, "URL",
	  "POST alert notifications here as JSON (default: log them)" },
	{ "alert-group-wait", XP_FLAG_STR, "DURATION",
	  "a new alert group waits this long for company (30s)" },
	{ "alert-interval", XP_FLAG_STR, "DURATION",
	  "later changes of a group are sent at most this often (5m)" },
	{ "alert-repeat", XP_FLAG_STR, "DURATION",
	  "a group still firing is sent again after this (4h)" },
	{ "alert-starved", XP_FLAG_STR, "DURATION",
	  "a queue with work pending and none running this long alerts (10m)" },
	{ "overcommit-memory", XP_FLAG_STR, "RULES",
	  "admit device memory up to F x physical on nodes that set no factor: F, or "
	  "CLASS=F / MODEL=F items (gpu=1.5,A100-SXM4-80GB=1.2)" },
	{ "metrics-public", XP_FLAG_BOOL, NULL,
	  "serve /metrics without a token: the series of jobs, nodes and devices, never "
	  "those naming queues or tenants (an admin token gets those)" },
	{ "tls-cert", XP_FLAG_STR, "FILE",
	  "serve https:// only, with this PEM certificate (chain); with --tls-key" },
	{ "tls-key", XP_FLAG_STR, "FILE", "the PEM private key of --tls-cert" },
	{ "tls", XP_FLAG_BOOL, NULL,
	  "xpool dev: serve https:// with a CA and certificate made in DATA/tls (kept "
	  "for the next start); clients verify against DATA/tls/ca.pem" },
	{ "no-agent", XP_FLAG_BOOL, NULL,
	  "xpool dev: do not start the local agent (real CPU and GPUs of this machine)" },
	{ "no-sync", XP_FLAG_BOOL, NULL,
	  "do not fsync commits (benchmarks only: a crash loses acknowledged work)" },
	{ "store", XP_FLAG_STR, "URL",
	  "etcd://HOST:PORT[,...][/PREFIX] (etcds:// for TLS): keep the journal in etcd and "
	  "take turns with "
	  "other controllers as leader (docs/design/ha.md); default: SQLite in --data" },
	{ "etcd-ca", XP_FLAG_STR, "FILE",
	  "--store etcds://: the CA that etcd's certificates are verified against "
	  "(default: the system's)" },
	{ "etcd-cert", XP_FLAG_STR, "FILE",
	  "--store etcds://: the client certificate (PEM) shown to etcd members that run "
	  "with --client-cert-auth; with --etcd-key" },
	{ "etcd-key", XP_FLAG_STR, "FILE", "--store etcds://: the private key of --etcd-cert" },
	{ "lease", XP_FLAG_STR, "DURATION",
	  "--store etcd: the leader's lease; a standby takes over this long after the "
	  "leader stops renewing it (default 5s, at least 2s)" },
	{ "advertise", XP_FLAG_STR, "URL",
	  "--store etcd: this controller's address as the others and clients should "
	  "reach it (default http://LISTEN, https:// with --tls-cert)" },
	{ "recover", XP_FLAG_BOOL, NULL,
	  "start on a damaged store: drop what fails its checksums or the seal, keep the "
	  "good prefix, and say what was dropped (docs/design/store.md)" },
	{ NULL, 0, NULL, NULL },
};

static int serve(const char *verb, int dev, int argc, char **argv)
{
	struct xp_flag flags[sizeof(server_flags) / sizeof(server_flags[0])];
	memcpy(flags, server_flags, sizeof(flags));
	if (dev)
		xp_flag_get(flags, "data")->help = "data directory (default: a fresh one in /tmp)";
	struct xp_ctl_opts o = { 0 };
	struct xp_err err = { 0 };
	struct xp_ctl *ctl = NULL;
	char tmpdir[] = "/tmp/xpool-dev-XXXXXX";
	int help, status = 2;
	sigset_t set;

	xp_flag_get(flags, "listen")->sval = (char *)"127.0.0.1:7700";
	xp_flag_get(flags, "policy")->sval = (char *)"bestfit";
	if (dev)
		xp_flag_get(flags, "cluster")->sval = (char *)"examples/clusters/mixed.yaml";
	if (xp_flags_parse(flags, argc, argv, &help, &err) < 0)
		goto usage;
	if (help) {
		xp_flags_usage(
			stdout, dev ? "xpool dev [flags]" : "xpool server --data DIR [flags]",
			dev ? "A controller on a fresh data directory with emulated nodes from a\n"
			      "cluster descriptor; prints the address and the admin token and\n"
			      "serves until interrupted. Emulated nodes finish a job after its\n"
			      "declared duration."
			    : "The controller: HTTP API (docs/api.md), durable journal in DIR,\n"
			      "scheduling. Serves until SIGINT or SIGTERM.",
			flags);
		status = 0;
		goto out;
	}
	if (xp_flag_get(flags, "config")->given &&
	    load_config(xp_flag_get(flags, "config")->sval, flags, &err) < 0) {
		status = xp_cli_fail(verb, &err, 1);
		goto out;
	}
	o.data = xp_flag_get(flags, "data")->sval;
	if (!o.data && dev) {
		if (!mkdtemp(tmpdir)) {
			xp_errf(&err, -errno, "cannot create a data directory: %s",
				strerror(errno));
			status = xp_cli_fail(verb, &err, 1);
			goto out;
		}
		o.data = tmpdir;
	}
	if (!o.data) {
		xp_errf(&err, XP_EINVAL, "--data DIR is required");
		goto usage;
	}
	o.listen = xp_flag_get(flags, "listen")->sval;
	o.cluster = xp_flag_get(flags, "cluster")->sval;
	o.policy = xp_flag_get(flags, "policy")->sval;
	o.sync = !xp_flag_get(flags, "no-sync")->bval;
	o.recover = xp_flag_get(flags, "recover")->bval;
	o.on_fatal = on_fatal;
	o.alert_webhook = xp_flag_get(flags, "alert-webhook")->sval;
	o.metrics_public = xp_flag_get(flags, "metrics-public")->bval;
	o.overcommit_memory = xp_flag_get(flags, "overcommit-memory")->sval;
	o.tls_cert = xp_flag_get(flags, "tls-cert")->sval;
	o.tls_key = xp_flag_get(flags, "tls-key")->sval;
	struct xp_tls_files tf;
	const char *ca = NULL; /* dev --tls: the CA its clients and agent verify against */
	if (xp_flag_get(flags, "tls")->bval && (!dev || o.tls_cert || o.tls_key)) {
		xp_errf(&err, XP_EINVAL,
			dev ? "--tls: it makes its own certificate: give --tls or "
			      "--tls-cert/--tls-key, not both"
			    : "--tls: xpool dev only (xpool server takes --tls-cert and "
			      "--tls-key)");
		goto usage;
	}
	struct xp_oc_rules oc;
	if (o.overcommit_memory && xp_oc_rules_parse(o.overcommit_memory, &oc, &err) < 0) {
		char why[sizeof(err.text)];
		snprintf(why, sizeof(why), "%s", err.text);
		xp_errf(&err, XP_EINVAL, "--overcommit-memory: %s", why);
		goto usage;
	}
	if (o.alert_webhook && strncmp(o.alert_webhook, "http://", 7) &&
	    strncmp(o.alert_webhook, "https://", 8)) {
		xp_errf(&err, XP_EINVAL,
			"--alert-webhook: expected an http:// or https:// URL, got '%s'",
			o.alert_webhook);
		goto usage;
	}
	if (policy_flags(flags, &o, &err) < 0)
		goto usage;
	if (time_flags(flags, &o, &err) < 0 || size_flags(flags, &o, &err) < 0 ||
	    store_flags(flags, dev, &o, &err) < 0)
		goto usage;
	char advertise[300], leader_seen[256] = "";
	snprintf(advertise, sizeof(advertise), "%s://%s", o.tls_cert ? "https" : "http", o.listen);
	o.advertise = xp_flag_get(flags, "advertise")->sval ? xp_flag_get(flags, "advertise")->sval
							     : advertise;
	o.standby = standby;
	o.standby_arg = leader_seen;

	/* the flags are good: now dev --tls may write its certificates */
	if (xp_flag_get(flags, "tls")->bval) {
		if (dev_tls(&o, &tf, &err) < 0) {
			status = xp_cli_fail(verb, &err, 1);
			goto out;
		}
		ca = tf.ca;
	}

	/* every thread inherits the mask; this one waits for the signal (SIGUSR1: on_fatal) */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
again:
	if (xp_ctl_start(&o, &ctl, &err) < 0) {
		if (o.store && err.code == XP_EUNAVAIL && !standby(leader_seen, NULL, NULL)) {
			fprintf(stderr, "xpool server: %s; trying again\n", err.text);
			sleep(1);
			goto again;
		}
		status = xp_cli_fail(verb, &err, 1);
		goto out;
	}
	pid_t agent = announce(ctl, &o, dev, dev && !xp_flag_get(flags, "no-agent")->bval, ca, &set);
	int failed = wait_for_stop(verb, ctl, &set);
	if (agent > 0) { /* first the agent (it ends its tasks), then the controller */
		kill(agent, SIGTERM);
		waitpid(agent, NULL, 0);
	}
	xp_ctl_stop(ctl);
	ctl = NULL;
	if (failed && o.store) { /* lost the lead (fenced, or the lease): stand by again */
		fprintf(stderr, "xpool server: stepped down\n");
		leader_seen[0] = '\0';
		goto again;
	}
	status = failed ? 1 : 0;
	goto out;
usage:
	status = xp_cli_fail(verb, &err, 2);
out:
	xp_flags_free(flags);
	return status;
}

int xp_verb_server(int argc, char **argv)
{
	return serve("server", 0, argc, argv);
}

int xp_verb_dev(int argc, char **argv)
{
	return serve("dev", 1, argc, argv);
}
