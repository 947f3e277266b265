/*
 * world: a controller state driven by records in a test, as the owner
 * thread drives it - every record through xp_rec_apply(), every
 * invariant checked after each, the accepted records kept as a journal to
 * replay. Shared by test_state, test_tenancy, test_mcts_cycle and others.
 */
#ifndef XP_TEST_WORLD_H
#define XP_TEST_WORLD_H

#include <stdint.h>

#include "core/state/state.h"
#include "lib/vec.h"

struct logrec {
	char *type, *body;
	int64_t at;
};

struct world {
	struct xp_state *st;
	XP_VEC(struct logrec) log;
	int64_t now;
	/* called with each record the cycle emits, before it is applied */
	void (*on_emit)(struct world *w, const char *type, const char *body);
	void *user;
	/* set: each record's changes of job and node states are checked
	 * against the diagrams of docs/design/controller.md, written out
	 * again in world.c, and counted: job_seen[from + 1][to] (from -1:
	 * submitted), node_seen likewise (-1: added) */
	int track;
	uint64_t job_seen[XP_JOB_STATE_N + 1][XP_JOB_STATE_N];
	uint64_t node_seen[XP_NODE_STATE_N + 1][XP_NODE_STATE_N];
};

/* The options of the tests' states: the defaults, and the edge's document
 * readers (xp_edge_docs) that every state needs. */
extern const struct xp_state_opts world_opts;

/* An empty state at now = 1000. */
void world_init(struct world *w);
/* The same with state options (a policy, the batch step). */
void world_init_opts(struct world *w, const struct xp_state_opts *o);
void world_free(struct world *w);
/* Apply a record (takes body); returns xp_rec_apply's code. Fails the
 * test when an invariant breaks. */
int world_apply(struct world *w, const char *type, char *body);
/* The cycle's emit callback (ctx: the world): the record encoded (the
 * codec's xp_rec_encode) and applied; fails the test on a refusal. */
int world_emit(void *ctx, const struct xp_rec *r);
/* Run the cycle until it has nothing more to do (seed 1). */
void world_cycle(struct world *w);
/* Submit a YAML spec as tenant; the job id, 0 if refused. */
uint64_t world_submit(struct world *w, const char *tenant, const char *yaml, const char *key);
/* A one-node descriptor (JSON, malloc'd): gpus of model (0: none), cpu cores,
 * 256 GiB. */
char *world_node_doc(const char *name, int gpus, const char *model, int cpu);
/* Replay log[0..upto) (from snap at snap_seq if given) into a new state and
 * return its snapshot (malloc'd). */
char *world_replay(struct world *w, size_t upto, const char *snap, uint64_t snap_seq);

#endif
