/* world: see world.h */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/rng.h"
#include "lib/xalloc.h"
#include "world.h"

void world_init(struct world *w)
{
	struct xp_err err = { 0 };
	memset(w, 0, sizeof(*w));
	w->st = xp_state_create(NULL, &err);
	assert_non_null(w->st);
	w->now = 1000;
}

int world_apply(struct world *w, const char *type, char *body)
{
	struct xp_err err = { 0 };
	assert_non_null(body);
	int rc = xp_state_apply(w->st, w->log.n + 1, w->now, type, body, strlen(body), NULL, &err);
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

int world_emit(void *ctx, const char *type, char *body)
{
	struct world *w = ctx;
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
	struct xp_state *st = xp_state_create(NULL, &err);
	assert_non_null(st);
	if (snap && xp_state_load_snapshot(st, snap, strlen(snap), &err) < 0)
		fail_msg("snapshot load: %s", err.text);
	for (size_t i = snap ? snap_seq : 0; i < upto; i++) {
		const struct logrec *r = &w->log.v[i];
		if (xp_state_apply(st, i + 1, r->at, r->type, r->body, strlen(r->body), NULL,
				   &err) < 0)
			fail_msg("replay of %zu (%s) failed: %s", i + 1, r->type, err.text);
	}
	assert_int_equal(xp_state_check(st, &err), 0);
	char *s = xp_state_snapshot(st);
	xp_state_destroy(st);
	return s;
}
