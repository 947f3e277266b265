/* world: see world.h */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edge/edge.h"
#include "lib/rng.h"
#include "lib/xalloc.h"
#include "world.h"

const struct xp_state_opts world_opts = { .docs = &xp_edge_docs };

/* o NULL: world_opts; without docs, the edge's readers */
void world_init_opts(struct world *w, const struct xp_state_opts *o)
{
	struct xp_err err = { 0 };
	struct xp_state_opts so = o ? *o : world_opts;
	if (!so.docs)
		so.docs = &xp_edge_docs;
	memset(w, 0, sizeof(*w));
	w->st = xp_state_create(&so, &err);
	assert_non_null(w->st);
	w->now = 1000;
}

void world_init(struct world *w)
{
	world_init_opts(w, NULL);
}

/* The diagrams of docs/design/controller.md, as the reader sees them:
 * may a job (node) go from `from` (-1: none yet) to `to`? */
static int doc_job_edge(int from, int to)
{
	switch (from) {
	case -1:
		return to == XP_JOB_PENDING;
	case XP_JOB_PENDING: /* start; cancel; a gang timeout */
		return to == XP_JOB_RUNNING || to == XP_JOB_CANCELLED || to == XP_JOB_FAILED;
	case XP_JOB_RUNNING: /* finish, cancel, requeue or preempt */
		return to == XP_JOB_SUCCEEDED || to == XP_JOB_FAILED || to == XP_JOB_CANCELLED ||
		       to == XP_JOB_PENDING;
	default: /* terminal: no way out */
		return 0;
	}
}

static int doc_node_edge(int from, int to)
{
	switch (from) {
	case -1:
		return to == XP_NODE_READY;
	case XP_NODE_READY: /* drained at once when it runs nothing */
		return to == XP_NODE_CORDONED || to == XP_NODE_DRAINING || to == XP_NODE_DRAINED ||
		       to == XP_NODE_DOWN;
	case XP_NODE_CORDONED:
		return to == XP_NODE_READY || to == XP_NODE_DRAINING || to == XP_NODE_DRAINED ||
		       to == XP_NODE_DOWN;
	case XP_NODE_DRAINING:
	case XP_NODE_DRAINED:
		return to == XP_NODE_READY || to == XP_NODE_DRAINED || to == XP_NODE_DOWN;
	case XP_NODE_DOWN:
		return to == XP_NODE_READY;
	}
	return 0;
}

struct seen {
	uint64_t id;
	int state;
};

/* every job's and node's state before a record (malloc'd; jobs by id) */
static struct seen *states_of(const struct xp_state *st, size_t *nj, int **nodes, size_t *nn)
{
	struct seen *v = XNEWV(struct seen, st->jobs.n + 1);
	for (size_t i = 0; i < st->jobs.n; i++)
		v[i] = (struct seen){ st->jobs.v[i]->id, st->jobs.v[i]->state };
	*nj = st->jobs.n;
	*nodes = XNEWV(int, st->nodes.n + 1);
	for (size_t n = 0; n < st->nodes.n; n++)
		(*nodes)[n] = st->nodes.v[n].state;
	*nn = st->nodes.n;
	return v;
}

/* each change since states_of, against the diagrams */
static void check_changes(struct world *w, const char *type, struct seen *before, size_t nj,
			  int *nodes, size_t nn)
{
	const struct xp_state *st = w->st;
	size_t k = 0;
	for (size_t i = 0; i < st->jobs.n; i++) { /* both by id: a merge */
		const struct xp_job *j = st->jobs.v[i];
		while (k < nj && before[k].id < j->id)
			assert_true(xp_job_terminal(before[k++].state)); /* forgotten */
		int from = k < nj && before[k].id == j->id ? before[k++].state : -1;
		if (from == j->state)
			continue;
		if (!doc_job_edge(from, j->state))
			fail_msg("%s: job %llu went %s -> %s, not in the diagram", type,
				 (unsigned long long)j->id,
				 from < 0 ? "-" : xp_job_state_name(from),
				 xp_job_state_name(j->state));
		w->job_seen[from + 1][j->state]++;
	}
	for (size_t n = 0; n < st->nodes.n; n++) {
		int from = n < nn ? nodes[n] : -1, to = st->nodes.v[n].state;
		if (from == to)
			continue;
		if (!doc_node_edge(from, to))
			fail_msg("%s: node %s went %s -> %s, not in the table", type,
				 st->c->nodes[n].name, from < 0 ? "-" : xp_node_state_name(from),
				 xp_node_state_name(to));
		w->node_seen[from + 1][to]++;
	}
}

int world_apply(struct world *w, const char *type, char *body)
{
	struct xp_err err = { 0 };
	struct seen *before = NULL;
	int *nodes = NULL;
	size_t nj = 0, nn = 0;
	assert_non_null(body);
	if (w->track)
		before = states_of(w->st, &nj, &nodes, &nn);
	int rc = xp_rec_apply(w->st, w->log.n + 1, w->now, type, body, strlen(body), NULL, &err);
	if (rc < 0 && getenv("WORLD_DEBUG"))
		fprintf(stderr, "world: %s refused: %s (%s)\n", type, err.text, body);
	if (w->track) {
		check_changes(w, type, before, nj, nodes, nn);
		free(before);
		free(nodes);
	}
	if (rc == 0) {
		struct logrec r = { xstrdup(type), body, w->now };
		xp_vec_push(&w->log, r);
	} else {
		free(body);
	}
	if (xp_state_check(w->st, &err) < 0)
		fail_msg("invariant after %s: %s", type, err.text);
	return rc;
}

int world_emit(void *ctx, const struct xp_rec *r)
{
	struct world *w = ctx;
	const char *type = xp_rec_type_name(r->type);
	char *body = xp_rec_encode(r);
	if (w->on_emit)
		w->on_emit(w, type, body);
	int rc = world_apply(w, type, body);
	if (rc < 0)
		fail_msg("%s from the cycle refused: %d", type, rc);
	return rc;
}

char *world_node_doc(const char *name, int gpus, const char *model, int cpu)
{
	char buf[1024];
	snprintf(buf, sizeof(buf),
		 "{\"version\":1,\"nodes\":[{\"name\":\"%s\",\"cpu\":%d,\"memory\":262144%s%s%s%s%"
		 "d%s}]}",
		 name, cpu,
		 gpus ? ",\"devices\":[{\"type\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":\"" : "",
		 gpus ? model : "", gpus ? "\",\"memory\":81920" : "", gpus ? ",\"count\":" : "",
		 gpus, gpus ? "}]" : "");
	if (!gpus) /* drop the stray count */
		snprintf(buf, sizeof(buf),
			 "{\"version\":1,\"nodes\":[{\"name\":\"%s\",\"cpu\":%d,\"memory\":262144}]"
			 "}",
			 name, cpu);
	return xstrdup(buf);
}

void world_free(struct world *w)
{
	for (size_t i = 0; i < w->log.n; i++) {
		free(w->log.v[i].type);
		free(w->log.v[i].body);
	}
	xp_vec_free(&w->log);
	xp_state_destroy(w->st);
}

uint64_t world_submit(struct world *w, const char *tenant, const char *yaml, const char *key)
{
	struct xp_jobspec s;
	struct xp_err err = { 0 };
	char field[320];
	if (xp_jobspec_parse_text("t", yaml, strlen(yaml), 0, &s, field, &err) < 0)
		fail_msg("spec: %s", err.text);
	uint64_t id = w->st->next_job_id;
	int rc = world_apply(w, "job.submit", xp_rec_job_submit(id, tenant, key, &s));
	xp_jobspec_free(&s);
	return rc == 0 ? id : 0;
}

void world_cycle(struct world *w)
{
	struct xp_rng rng;
	xp_rng_seed(&rng, 1);
	for (int i = 0; i < 1000 && xp_state_cycle_more(w->st); i++)
		if (xp_state_cycle(w->st, w->now, 1000, &rng, world_emit, w) < 0)
			fail_msg("the cycle failed");
}

char *world_replay(struct world *w, size_t upto, const char *snap, uint64_t snap_seq)
{
	struct xp_err err = { 0 };
	struct xp_state *st = xp_state_create(&world_opts, &err);
	assert_non_null(st);
	if (snap && xp_state_load_snapshot(st, snap, strlen(snap), &err) < 0)
		fail_msg("snapshot load: %s", err.text);
	for (size_t i = snap ? snap_seq : 0; i < upto; i++) {
		const struct logrec *r = &w->log.v[i];
		if (xp_rec_apply(st, i + 1, r->at, r->type, r->body, strlen(r->body), NULL,
				   &err) < 0)
			fail_msg("replay of %zu (%s) failed: %s", i + 1, r->type, err.text);
	}
	assert_int_equal(xp_state_check(st, &err), 0);
	char *s = xp_state_snapshot(st);
	xp_state_destroy(st);
	return s;
}
