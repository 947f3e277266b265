/*
 * sched_harness: shared machinery of the scheduling-core tests
 * (test_sched_ref, test_sched_random, test_sched_edges).
 *
 * Random worlds (mixed clusters and OpenB-like ones), random requests and
 * workloads M; a harness that drives the core (with the score index, as a
 * plain scan and with a tiny index budget) and the reference of
 * tests/ref_sched.c in lock-step through a random operation stream;
 * printing for failures; small hand-made clusters and requests.
 *
 * Everything is seeded; a failure prints the seed, the case and the
 * operation, so it can be replayed.
 */
#ifndef XP_SCHED_HARNESS_H
#define XP_SCHED_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "testutil.h"

#include "core/model/model.h"
#include "core/sched/sched.h"
#include "lib/rng.h"
#include "ref_sched.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The deterministic policies (every one but "random"). */
#define NDET_POLICIES 9
extern const char *const det_policies[NDET_POLICIES];

/* Operation counters, printed by sched_print_ops with XP_REF_VERBOSE=1;
 * each test binary has its own. */
extern size_t total_ops, n_placed, n_nofit, n_released, n_explain, n_checks;
void sched_print_ops(const char *binary);

static inline uint64_t below(struct xp_rng *g, uint64_t n)
{
	return xp_rng_below(g, n);
}

static inline int chance(struct xp_rng *g, unsigned pct)
{
	return below(g, 100) < pct;
}

/* ------------------------------------------------------------------------ */
/* random worlds and requests */

struct world {
	struct xp_cluster *c;
	xp_sym vendor[3];
	xp_sym model[8];
	int nmodel;
	int openb;
	int noaccel; /* no accelerator anywhere: MAXMILLI = 0 */
};

void gen_request(const struct world *w, struct xp_rng *g, struct xp_request *q);

/* ------------------------------------------------------------------------ */
/* printing, for failures; comparison */

void print_request(const char *what, const struct xp_request *q);
void print_alloc(const char *who, int rc, const struct xp_alloc *a);
void print_node(const struct ref_sched *r, uint32_t n, const struct xp_request *q);
int same_alloc(const struct xp_alloc *a, const struct xp_alloc *b);

/* ------------------------------------------------------------------------ */
/* small hand-made clusters and requests */

/* A node named eNN with ngpu GPUs of gmem MiB each. */
struct xp_node *add_node(struct xp_cluster *c, uint64_t cpu, uint64_t mem, int ngpu, uint64_t gmem);
void whole_req(struct xp_request *q, uint64_t cpu, uint16_t k);
void frac_req(struct xp_request *q, uint64_t cpu, uint16_t milli, uint64_t mem);
/* A core; fails the test when it cannot be created. */
struct xp_sched *mk_core(const struct xp_cluster *c, const char *policy, int tiebreak, int no_index,
			 size_t index_bytes);

/* ------------------------------------------------------------------------ */
/* the harness: cores + reference, one operation stream */

#define NCORE 3

struct entry {
	struct xp_alloc a[NCORE];
	struct xp_alloc ra;
};

struct harness {
	struct world w;
	const char *policy;
	int tiebreak;
	int exact; /* 1: decisions must be identical; 0: checked for validity */
	struct xp_sched *s[NCORE];
	const char *sname[NCORE];
	int ns;
	struct ref_sched *r;
	struct entry *live;
	size_t nlive, cap;
	struct xp_rng g;  /* the stream */
	struct xp_rng cr; /* handed to the cores */
	struct xp_rng rr; /* handed to the reference */
	uint64_t seed;
	size_t op;
	const char *kind;
	struct xp_wshape m[64];
	size_t nm;
	uint32_t *rank;
};

/* exact: index, scan and index4k cores, decisions identical to the
 * reference's; loose: one core (scan when no_index), each decision checked
 * for feasibility and maximality. kind: "openb" or "random". */
void h_init(struct harness *h, const char *policy, int tiebreak, int exact, int no_index,
	    const char *kind, size_t nnodes, uint64_t seed);
void h_free(struct harness *h);
/* Pick in every core and the reference, compare, commit. */
void h_place(struct harness *h, const struct xp_request *q);
/* Commit the policy's devices on a random node that can take a random
 * request, bypassing pick: state churn without queries. */
void h_direct(struct harness *h);
void h_release(struct harness *h);
void h_toggle_node(struct harness *h);
void h_toggle_dev(struct harness *h);
/* Compare the observers: invariants, F(M), F_n(M), used/total milli, free
 * capacity. */
void h_check_state(struct harness *h);
/* One random stream of nops operations, then a drain to empty. */
void h_run(struct harness *h, size_t nops);

/* ncases seeded streams of one policy over mostly small and medium
 * clusters (every third OpenB-like); loose cases run index and scan. */
void run_policy_cases(const char *policy, int tiebreak, int exact, int ncases, uint64_t seed0);

#endif
