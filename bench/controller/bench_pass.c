/*
 * xp_bench_pass: one scheduling pass of the controller's state layer over
 * a queue of pending jobs, in process, without HTTP or the journal.
 *
 *   xp_bench_pass [--cluster FILE] [--jobs M] [--runs R] [--policy P]
 *
 * The state is built the way the controller builds it, through journal
 * records applied with xp_rec_apply(): the nodes of the descriptor
 * (default examples/clusters/bench-512.yaml) as emulated nodes, then the
 * Slurm peer's queued test (its README, rule 5): two gang jobs hold every
 * A100 node and every V100 node whole, then M jobs of the job mix (job i =
 * row i mod 8) are submitted and tried once each, as the controller tries
 * new jobs - none fits. Two passes are timed, R times each:
 *
 *   held     capacity is made to look grown (st->cap_grew = 1) while the
 *            blockers still hold everything: xp_state_cycle() walks all M
 *            pending jobs in order and places none. The state is reused.
 *   release  the blockers are cancelled (job.cancel records), then one
 *            xp_state_cycle() walks all M and places what fits; each
 *            placement is a job.start record built and applied in the
 *            timed region, as in the controller (minus its journal append
 *            and event). A fresh state per run.
 *
 *   backfill the A100 blocker holds half of each A100 node (time limit 1h),
 *            the V100 one every V100 node whole (2h); the M jobs carry
 *            time limits of 30m and 2h (alternating) and one
 *            xp_state_cycle() tries them all: the first blocked jobs get
 *            reservations from the limits, and every later job starts
 *            only if it cannot delay one (docs/design/tenancy.md,
 *            "Backfill"). Every pending job is considered, none skipped.
 *            A fresh state per run.
 *
 * The budget is larger than M, so one call is one whole pass (the
 * controller's default --max-per-cycle 2000 would split it into calls with
 * requests served between them). Prints the median, min and max per pass.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/state.h"
#include "descriptor/descriptor.h"
#include "edge/edge.h"
#include "lib/clock.h"
#include "lib/xalloc.h"
#include "mix.h"

#define BUDGET ((size_t)1 << 30)

struct bench {
	struct xp_state *st;
	int64_t now;
	uint64_t seq;
};

static void die(const char *what, const struct xp_err *err)
{
	fprintf(stderr, "xp_bench_pass: %s: %s\n", what, err ? err->text : "failed");
	exit(1);
}

static void apply(struct bench *b, const char *type, char *body)
{
	struct xp_err err = { 0 };
	if (!body)
		die(type, NULL);
	if (xp_rec_apply(b->st, ++b->seq, b->now, type, body, strlen(body), NULL, &err) < 0)
		die(type, &err);
	free(body);
}

static int emit(void *ctx, const struct xp_rec *r)
{
	apply(ctx, xp_rec_type_name(r->type), xp_rec_encode(r));
	return 0;
}

static void submit(struct bench *b, const char *text)
{
	struct xp_jobspec s;
	struct xp_err err = { 0 };
	char field[320];
	if (xp_jobspec_parse_text("bench", text, strlen(text), -1, &s, field, &err) < 0)
		die(text, &err);
	apply(b, "job.submit", xp_rec_job_submit(b->st->next_job_id, "admin", NULL, &s));
	xp_jobspec_free(&s);
}

static long cycle(struct bench *b)
{
	struct xp_rng rng;
	xp_rng_seed(&rng, 1);
	long placed = xp_state_cycle(b->st, b->now, BUDGET, &rng, emit, b);
	if (placed < 0 || b->st->pass != NULL) {
		fprintf(stderr, "xp_bench_pass: the cycle did not finish its pass (%ld)\n", placed);
		exit(1);
	}
	return placed;
}

/* nodes, blockers, M queued jobs tried once (not with bf: the backfill
 * scenario's pass is the first); the blockers' ids are ids[0] .. ids[1] - 1 */
static void build(struct bench *b, const struct xp_cluster *c, const char *policy, size_t jobs,
		  uint64_t ids[2], int bf)
{
	struct xp_state_opts so = { .policy = policy, .docs = &xp_edge_docs };
	struct xp_err err = { 0 };
	char text[512], model[2][8] = { "A100", "V100" };
	size_t per[2] = { 0, 0 };
	int cpu[2] = { 0, 0 }, gpus[2] = { 0, 0 };
	long long mem[2] = { 0, 0 };

	memset(b, 0, sizeof(*b));
	b->now = 1000;
	if (!(b->st = xp_state_create(&so, &err)))
		die("state", &err);
	apply(b, "tenant.create", xp_rec_tenant_create("admin"));
	apply(b, "queue.create", xp_rec_queue_create("default", 0, 1));
	for (size_t i = 0; i < c->nnodes; i++) {
		const struct xp_node *n = &c->nodes[i];
		struct xp_cluster *one = xp_cluster_create();
		xp_cluster_copy_node(one, c, n, NULL);
		char *d = xp_descriptor_to_json(one);
		xp_cluster_destroy(one);
		apply(b, "node.add", xp_rec_node_add(XP_SRC_EMULATED, d));
		free(d);
		/* the blockers' shapes: the nodes with a100 / v100 GPUs, whole */
		int k = n->ndevs && !strcmp(xp_strtab_str(c->syms, n->devs[0].model), "V100");
		per[k]++;
		cpu[k] = (int)(n->cpu_milli / 1000);
		mem[k] = (long long)n->mem_mib;
		gpus[k] = n->ndevs;
	}
	/* a gang job has at most 1024 replicas (jobspec.c): a shape of more
	 * nodes is held by several blockers, ids ids[0] .. ids[1] - 1 */
	ids[0] = b->st->next_job_id;
	for (int k = 0; k < 2; k++) {
		int part = bf && k == 0 ? 2 : 1; /* backfill: half of each A100 node */
		for (size_t done = 0; done < per[k]; done += 1024) {
			size_t reps = per[k] - done < 1024 ? per[k] - done : 1024;
			snprintf(text, sizeof(text),
				 "{\"name\":\"block%s\",\"replicas\":%zu,\"resources\":{\"cpu\":%d,"
				 "\"memory\":%lld,\"devices\":{\"count\":%d,\"class\":\"gpu\","
				 "\"models\":[\"%s\"]}},\"duration\":\"1h\"%s}",
				 /* one half-replica a node: a core over half, so two never pair up */
				 model[k], reps, cpu[k] / part + (part > 1), mem[k] / part,
				 gpus[k] / part, model[k],
				 !bf	  ? ""
				 : k == 0 ? ",\"time_limit\":\"1h\""
					  : ",\"time_limit\":\"2h\"");
			submit(b, text);
		}
	}
	ids[1] = b->st->next_job_id;
	cycle(b);
	for (uint64_t id = ids[0]; id < ids[1]; id++)
		if (xp_state_job(b->st, id)->state != XP_JOB_RUNNING)
			die("a blocker did not start: the cluster is not as expected", NULL);
	for (size_t i = 0; i < jobs; i++) {
		if (!xp_mix_spec(i, "0s", text, sizeof(text)))
			die("job spec", NULL);
		if (bf) { /* the mix with time limits */
			size_t n = strlen(text);
			snprintf(text + n - 1, sizeof(text) - n + 1, ",\"time_limit\":\"%s\"}",
				 i % 2 ? "2h" : "30m");
		}
		submit(b, text);
	}
	if (bf)
		return;
	if (cycle(b) != 0) /* new jobs are tried once, as the controller does */
		die("a queued job started: the blockers do not hold the cluster", NULL);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *name, double *ms, int runs, size_t jobs, size_t nodes, long placed,
		   uint64_t tried)
{
	qsort(ms, (size_t)runs, sizeof(*ms), cmp_d);
	printf("pass_%s jobs=%zu nodes=%zu runs=%d median_ms=%.3f min_ms=%.3f max_ms=%.3f "
	       "placed=%ld tried=%llu\n",
	       name, jobs, nodes, runs, ms[runs / 2], ms[0], ms[runs - 1], placed,
	       (unsigned long long)tried);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cluster", required_argument, NULL, 'c' },
		{ "jobs", required_argument, NULL, 'n' },
		{ "runs", required_argument, NULL, 'r' },
		{ "policy", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = "examples/clusters/bench-512.yaml", *policy = "bestfit";
	size_t jobs = 10000;
	int runs = 5, opt;
	struct xp_err err = { 0 };

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'n':
			jobs = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			runs = atoi(optarg);
			break;
		case 'p':
			policy = optarg;
			break;
		case 'h':
			printf("usage: xp_bench_pass [--cluster FILE] [--jobs M] [--runs R] "
			       "[--policy P]\n"
			       "Time one scheduling pass over M pending jobs of the Slurm "
			       "peer's mix on a cluster held full\n"
			       "(pass_held) and right after it is released "
			       "(pass_release).\n");
			return 0;
		default:
			fprintf(stderr, "xp_bench_pass: see --help\n");
			return 2;
		}
	}
	if (jobs < 1 || runs < 1 || runs > 1000) {
		fprintf(stderr, "xp_bench_pass: --jobs >= 1 and --runs 1..1000\n");
		return 2;
	}
	struct xp_cluster *c = xp_descriptor_load_file(path, &err);
	if (!c)
		die(path, &err);
	double *ms = XNEWV(double, (size_t)runs);
	struct bench b;
	uint64_t ids[2];

	uint64_t t0 = xp_mono_ns();
	build(&b, c, policy, jobs, ids, 0);
	printf("build nodes=%zu jobs=%zu policy=%s build_s=%.3f\n", c->nnodes, jobs, policy,
	       (double)(xp_mono_ns() - t0) / 1e9);

	uint64_t tried0 = b.st->placed + b.st->unplaced;
	long placed = 0;
	for (int r = 0; r < runs; r++) {
		b.st->cap_grew = 1;
		t0 = xp_mono_ns();
		placed += cycle(&b);
		ms[r] = (double)(xp_mono_ns() - t0) / 1e6;
	}
	report("held", ms, runs, jobs, c->nnodes, placed,
	       (b.st->placed + b.st->unplaced - tried0) / (uint64_t)runs);
	xp_state_destroy(b.st);

	for (int r = 0; r < runs; r++) {
		build(&b, c, policy, jobs, ids, 0);
		for (uint64_t id = ids[0]; id < ids[1]; id++)
			apply(&b, "job.cancel", xp_rec_job_cancel(id, "released"));
		tried0 = b.st->placed + b.st->unplaced;
		t0 = xp_mono_ns();
		placed = cycle(&b);
		ms[r] = (double)(xp_mono_ns() - t0) / 1e6;
		tried0 = b.st->placed + b.st->unplaced - tried0;
		xp_state_destroy(b.st);
	}
	report("release", ms, runs, jobs, c->nnodes, placed, tried0);

	uint64_t held = 0, reserved = 0, filled = 0;
	for (int r = 0; r < runs; r++) {
		build(&b, c, policy, jobs, ids, 1);
		tried0 = b.st->placed + b.st->unplaced;
		uint64_t h0 = b.st->held_back, f0 = b.st->backfilled;
		t0 = xp_mono_ns();
		placed = cycle(&b);
		ms[r] = (double)(xp_mono_ns() - t0) / 1e6;
		tried0 = b.st->placed + b.st->unplaced - tried0;
		held = b.st->held_back - h0;
		filled = b.st->backfilled - f0;
		reserved = 0;
		for (size_t k = 0; k < b.st->jobs.n; k++) {
			int64_t at;
			reserved += xp_backfill_holds(b.st->resv, b.st->jobs.v[k]->id, &at);
		}
		xp_state_destroy(b.st);
	}
	report("backfill", ms, runs, jobs, c->nnodes, placed, tried0);
	printf("backfill reservations=%llu backfilled=%llu (started while one was held) "
	       "held_back=%llu (would have delayed one)\n",
	       (unsigned long long)reserved, (unsigned long long)filled, (unsigned long long)held);
	free(ms);
	xp_cluster_destroy(c);
	return 0;
}
