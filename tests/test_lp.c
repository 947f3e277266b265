/*
 * test_lp: the dense simplex (src/lib/lp.c).
 *
 *  - hand cases with known optima: a textbook two-variable LP, an unbounded
 *    one, degenerate ones (b_i = 0 rows; Beale's example, on which Dantzig's
 *    rule with lowest-index ties cycles), a max-min fairness LP, and a large
 *    symmetric fairness LP whose answer is sum_k a_k n_k / jobs;
 *  - bad input: sizes 0, b < 0, NaN and infinity, NULL; outputs untouched;
 *  - a naive reference on random small LPs: the optimum by enumerating
 *    every vertex (each choice of cols active constraints among the rows and
 *    the x_i = 0 bounds, solved by Gaussian elimination). Unboundedness is
 *    decided exactly too: the LP (feasible at the origin) is unbounded iff
 *    some ray r >= 0, A r <= 0 has c.r > 0, i.e. iff the bounded LP
 *    max c.r, A r <= 0, sum r <= 1, r >= 0 has a positive optimum, which
 *    the same enumeration finds. A third of the instances are uniform as
 *    in the brief, a third on a coarse grid with many b_i = 0 (ties,
 *    degeneracy), a third on that grid with b moved by under 1e-8, so that
 *    the solver's own perturbation of b often lands it on a vertex that is
 *    infeasible for the true b and its dual clean-up has to run;
 *  - larger random LPs (200 x 300, sparse, up to a third of b zero): the
 *    answer is feasible, no random feasible point beats it, and permuting
 *    the rows and columns gives the same optimum;
 *  - the time of one solve at the sizes we expect (printed, not asserted).
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/lp.h"
#include "lib/lpcentral.h"
#include "lib/rng.h"
#include "lib/xalloc.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------ */
/* helpers */

static double dot(size_t n, const double *a, const double *x)
{
	double s = 0;
	for (size_t j = 0; j < n; j++)
		s += a[j] * x[j];
	return s;
}

/* The largest violation of A x <= b, x >= 0, each row's relative to
 * 1 + |b_i| + sum_j |a_ij x_j|. */
static double violation(size_t m, size_t n, const double *A, const double *b, const double *x)
{
	double v = 0;
	for (size_t j = 0; j < n; j++)
		if (-x[j] > v)
			v = -x[j];
	for (size_t i = 0; i < m; i++) {
		double s = 0, mag = 1 + fabs(b[i]);
		for (size_t j = 0; j < n; j++) {
			s += A[i * n + j] * x[j];
			mag += fabs(A[i * n + j] * x[j]);
		}
		if ((s - b[i]) / mag > v)
			v = (s - b[i]) / mag;
	}
	return v;
}

static double uniform(struct xp_rng *g, double lo, double hi)
{
	return lo + (hi - lo) * xp_rng_double(g);
}

/* Solve, expect success, check feasibility and obj = c.x; returns obj. */
static double solve_ok(size_t m, size_t n, const double *A, const double *b, const double *c,
		       double *x)
{
	double obj = NAN;
	assert_int_equal(xp_lp_max(m, n, A, b, c, x, &obj), 0);
	assert_true(violation(m, n, A, b, x) <= 1e-9);
	assert_true(fabs(obj - dot(n, c, x)) <= 1e-12 * (1 + fabs(obj)));
	return obj;
}

/* ------------------------------------------------------------------------ */
/* the naive reference */

#define REF_MAXN 6
#define REF_MAXK 16 /* rows + cols */

/* Solve the n x n system M y = r in place; 0, or -1 when (nearly) singular. */
static int gauss(size_t n, double M[REF_MAXN][REF_MAXN], double r[REF_MAXN], double y[REF_MAXN])
{
	for (size_t k = 0; k < n; k++) {
		size_t p = k;
		for (size_t i = k + 1; i < n; i++)
			if (fabs(M[i][k]) > fabs(M[p][k]))
				p = i;
		if (fabs(M[p][k]) < 1e-10)
			return -1;
		for (size_t j = 0; j < n; j++) {
			double t = M[k][j];
			M[k][j] = M[p][j];
			M[p][j] = t;
		}
		double t = r[k];
		r[k] = r[p];
		r[p] = t;
		for (size_t i = k + 1; i < n; i++) {
			double f = M[i][k] / M[k][k];
			for (size_t j = k; j < n; j++)
				M[i][j] -= f * M[k][j];
			r[i] -= f * r[k];
		}
	}
	for (size_t k = n; k-- > 0;) {
		double s = r[k];
		for (size_t j = k + 1; j < n; j++)
			s -= M[k][j] * y[j];
		y[k] = s / M[k][k];
	}
	return 0;
}

/* max c.x over the vertices of {A x <= b, x >= 0}: every choice of n
 * active constraints among the m rows and the n bounds x_j >= 0. The
 * origin is one, so the set is never empty. */
static double ref_max(size_t m, size_t n, const double *A, const double *b, const double *c)
{
	size_t k = m + n;
	double best = -INFINITY;

	assert_true(n <= REF_MAXN && k <= REF_MAXK);
	for (unsigned mask = 0; mask < 1u << k; mask++) {
		if ((size_t)__builtin_popcount(mask) != n)
			continue;
		double M[REF_MAXN][REF_MAXN], r[REF_MAXN], y[REF_MAXN];
		size_t q = 0;
		for (size_t e = 0; e < k; e++) {
			if (!(mask & 1u << e))
				continue;
			for (size_t j = 0; j < n; j++)
				M[q][j] = e < m ? A[e * n + j] : (e - m == j ? -1 : 0);
			r[q++] = e < m ? b[e] : 0;
		}
		if (gauss(n, M, r, y))
			continue;
		if (violation(m, n, A, b, y) > 1e-9)
			continue;
		double z = dot(n, c, y);
		if (z > best)
			best = z;
	}
	return best;
}

/* max c.r over rays r >= 0, A r <= 0, normalised by sum r <= 1: positive
 * iff the LP is unbounded. */
static double ref_ray(size_t m, size_t n, const double *A, const double *c)
{
	double A2[(REF_MAXK - REF_MAXN) * REF_MAXN], b2[REF_MAXK - REF_MAXN];

	assert_true(m + 1 <= REF_MAXK - REF_MAXN);
	memcpy(A2, A, m * n * sizeof(double));
	for (size_t i = 0; i < m; i++)
		b2[i] = 0;
	for (size_t j = 0; j < n; j++)
		A2[m * n + j] = 1;
	b2[m] = 1;
	return ref_max(m + 1, n, A2, b2, c);
}

/* ------------------------------------------------------------------------ */
/* hand cases */

static void test_textbook(void **st)
{
	(void)st;
	/* max 3x + 5y: x <= 4, 2y <= 12, 3x + 2y <= 18 -> (2, 6), 36 */
	const double A[] = { 1, 0, 0, 2, 3, 2 }, b[] = { 4, 12, 18 }, c[] = { 3, 5 };
	double x[2];
	assert_true(fabs(solve_ok(3, 2, A, b, c, x) - 36) < 1e-12);
	assert_true(fabs(x[0] - 2) < 1e-12 && fabs(x[1] - 6) < 1e-12);

	/* c <= 0: the origin is optimal */
	const double c0[] = { -1, 0 };
	assert_true(solve_ok(3, 2, A, b, c0, x) == 0);
	assert_true(x[0] == 0);
}

static void test_unbounded(void **st)
{
	(void)st;
	/* max x + y: x - y <= 1, -x + y <= 1 (the ray x = y) */
	const double A[] = { 1, -1, -1, 1 }, b[] = { 1, 1 }, c[] = { 1, 1 };
	double x[2] = { 7, 7 }, obj = 7;
	assert_int_equal(xp_lp_max(2, 2, A, b, c, x, &obj), 1);
	assert_true(obj == 7 && x[0] == 7 && x[1] == 7);

	/* a column with no positive entry and a positive cost */
	const double A2[] = { 1, -1 }, b2[] = { 0 }, c2[] = { 0, 1 };
	assert_int_equal(xp_lp_max(1, 2, A2, b2, c2, x, &obj), 1);

	/* along the ray x0 = x1: unbounded when c0 + c1 > 0, else 0 */
	const double c3[] = { 2, -1 };
	assert_int_equal(xp_lp_max(1, 2, A2, b2, c3, x, &obj), 1);
	const double c4[] = { 1, -1 };
	assert_int_equal(xp_lp_max(1, 2, A2, b2, c4, x, &obj), 0);
	assert_true(obj == 0);
}

static void test_degenerate(void **st)
{
	(void)st;
	double x[4];

	/* max x + y: x - y <= 0, y - x <= 0, x - 2y <= 0, x + y <= 4:
	 * degenerate at the origin, optimum (2, 2) */
	const double A[] = { 1, -1, -1, 1, 1, -2, 1, 1 }, b[] = { 0, 0, 0, 4 }, c[] = { 1, 1 };
	assert_true(fabs(solve_ok(4, 2, A, b, c, x) - 4) < 1e-12);
	assert_true(fabs(x[0] - 2) < 1e-12 && fabs(x[1] - 2) < 1e-12);

	/* all b = 0: the origin is the only vertex */
	const double bz[] = { 0, 0, 0, 0 };
	const double Az[] = { 1, -1, -1, 2, 1, 1, 0, 1 };
	assert_true(solve_ok(4, 2, Az, bz, c, x) == 0);

	/* Beale (1955): max 3/4 x4 - 20 x5 + 1/2 x6 - 6 x7, optimum 5/4 at
	 * x4 = x6 = 1; Dantzig with lowest-index ties cycles on it */
	const double Ab[] = {
		0.25, -8, -1, 9, /**/ 0.5, -12, -0.5, 3, /**/ 0, 0, 1, 0,
	};
	const double bb[] = { 0, 0, 1 }, cb[] = { 0.75, -20, 0.5, -6 };
	assert_true(fabs(solve_ok(3, 4, Ab, bb, cb, x) - 1.25) < 1e-12);
	assert_true(fabs(x[0] - 1) < 1e-12 && fabs(x[2] - 1) < 1e-12);
	assert_true(fabs(ref_max(3, 4, Ab, bb, cb) - 1.25) < 1e-12);
}

/*
 * Max-min fairness: jobs j on resource types k with n_k units, job j doing
 * a_jk work per unit of type k, X_jk its share of time on k:
 *
 *   max t:  t - sum_k a_jk X_jk <= 0   (each job j)
 *           sum_j X_jk <= n_k          (each type k)
 *           sum_k X_jk <= 1            (each job j)
 *
 * Variables: t, then X row-major (job, type). Fills A (2J + K rows) and b.
 */
static void fairness(size_t J, size_t K, const double *a, const double *cap, double *A, double *b,
		     double *c)
{
	size_t n = 1 + J * K, m = 2 * J + K;
	memset(A, 0, m * n * sizeof(double));
	memset(c, 0, n * sizeof(double));
	c[0] = 1;
	for (size_t j = 0; j < J; j++) {
		A[j * n] = 1;
		for (size_t k = 0; k < K; k++)
			A[j * n + 1 + j * K + k] = -a[j * K + k];
		b[j] = 0;
	}
	for (size_t k = 0; k < K; k++) {
		for (size_t j = 0; j < J; j++)
			A[(J + k) * n + 1 + j * K + k] = 1;
		b[J + k] = cap[k];
	}
	for (size_t j = 0; j < J; j++) {
		for (size_t k = 0; k < K; k++)
			A[(J + K + j) * n + 1 + j * K + k] = 1;
		b[J + K + j] = 1;
	}
}

static void test_fairness(void **st)
{
	(void)st;
	/* two jobs, two types of one unit each; job 0 does 1 or 2, job 1 does
	 * 1 or 4. Job 0 has the comparative advantage on type 0: it gets all
	 * of type 0 left over by job 1 and a share q of type 1; both jobs full
	 * time gives t = 1 + q = 4 - 3q, q = 3/4, t = 7/4. */
	const double a[] = { 1, 2, 1, 4 }, cap[] = { 1, 1 };
	double A[6 * 5], b[6], c[5], x[5];
	fairness(2, 2, a, cap, A, b, c);
	assert_true(fabs(solve_ok(6, 5, A, b, c, x) - 1.75) < 1e-12);
	assert_true(fabs(x[1] - 0.25) < 1e-12 && fabs(x[2] - 0.75) < 1e-12);
	assert_true(fabs(x[3] - 0.75) < 1e-12 && fabs(x[4] - 0.25) < 1e-12);
	assert_true(fabs(ref_max(6, 5, A, b, c) - 1.75) < 1e-12);

	/* J identical jobs, J >= sum n_k: everything is used, equally, so
	 * t = sum_k a_k n_k / J. Very degenerate (J rows with b = 0). */
	enum { J = 100, K = 4 };
	const double ak[K] = { 1, 2, 3, 0.5 }, capk[K] = { 10, 20, 5, 15 };
	double *aa = xmalloc(J * K * sizeof(double));
	for (size_t j = 0; j < J; j++)
		memcpy(aa + j * K, ak, sizeof(ak));
	size_t n = 1 + J * K, m = 2 * J + K;
	double *AA = xmalloc(m * n * sizeof(double)), *bb = xmalloc(m * sizeof(double));
	double *cc = xmalloc(n * sizeof(double)), *xx = xmalloc(n * sizeof(double));
	fairness(J, K, aa, capk, AA, bb, cc);
	double want = (1 * 10 + 2 * 20 + 3 * 5 + 0.5 * 15) / (double)J;
	assert_true(fabs(solve_ok(m, n, AA, bb, cc, xx) - want) < 1e-9);
	free(aa);
	free(AA);
	free(bb);
	free(cc);
	free(xx);
}

static void test_bad_input(void **st)
{
	(void)st;
	const double A[] = { 1, 0, 0, 1 }, b[] = { 1, 1 }, c[] = { 1, 1 };
	double x[2] = { 9, 9 }, obj = 9;

	assert_int_equal(xp_lp_max(0, 2, A, b, c, x, &obj), -1);
	assert_int_equal(xp_lp_max(2, 0, A, b, c, x, &obj), -1);
	assert_int_equal(xp_lp_max(2, 2, NULL, b, c, x, &obj), -1);
	assert_int_equal(xp_lp_max(2, 2, A, b, c, NULL, &obj), -1);
	assert_int_equal(xp_lp_max(2, 2, A, b, c, x, NULL), -1);
	const double bn[] = { 1, -1e-300 };
	assert_int_equal(xp_lp_max(2, 2, A, bn, c, x, &obj), -1);
	const double An[] = { 1, NAN, 0, 1 };
	assert_int_equal(xp_lp_max(2, 2, An, b, c, x, &obj), -1);
	const double bi[] = { INFINITY, 1 };
	assert_int_equal(xp_lp_max(2, 2, A, bi, c, x, &obj), -1);
	const double cn[] = { 1, NAN };
	assert_int_equal(xp_lp_max(2, 2, A, b, cn, x, &obj), -1);
	assert_true(obj == 9 && x[0] == 9 && x[1] == 9);
	assert_int_equal(xp_lp_max(2, 2, A, b, c, x, &obj), 0);
	assert_true(obj == 2);
}

/* ------------------------------------------------------------------------ */
/* random small LPs against the reference */

static void test_random_small(void **st)
{
	(void)st;
	struct xp_rng g;
	int bounded = 0, unbounded = 0, skipped = 0;
	const int N = 3000;

	xp_rng_seed(&g, 20240611);
	for (int t = 0; t < N; t++) {
		size_t n = 2 + xp_rng_below(&g, 3), m = 2 + xp_rng_below(&g, 5);
		double A[6 * 4], b[6], c[4], x[4], obj = NAN;
		/* a third as the brief has it, uniform; a third on a coarse
		 * grid with many b = 0: ties, degeneracy; a third on the grid
		 * with b moved by under 1e-8, less than the solver perturbs b
		 * by, so the perturbed optimum is often infeasible and the
		 * dual clean-up runs */
		int mode = t % 3;
		for (size_t i = 0; i < m * n; i++)
			A[i] = mode ? -1 + 0.5 * (double)xp_rng_below(&g, 7) : uniform(&g, -1, 2);
		for (size_t i = 0; i < m; i++) {
			if (!mode) {
				b[i] = uniform(&g, 0, 3);
				continue;
			}
			b[i] = xp_rng_below(&g, 2) ? 0 : (double)xp_rng_below(&g, 4);
			if (mode == 2)
				b[i] = fabs(b[i] + uniform(&g, -1e-8, 1e-8));
		}
		for (size_t j = 0; j < n; j++)
			c[j] = mode ? -1 + 0.5 * (double)xp_rng_below(&g, 7) : uniform(&g, -1, 2);

		double ray = ref_ray(m, n, A, c);
		if (ray > 1e-10 && ray < 1e-7) {
			skipped++; /* too close to call */
			continue;
		}
		int rc = xp_lp_max(m, n, A, b, c, x, &obj);
		if (ray >= 1e-7) {
			if (rc != 1)
				print_error("instance %d: unbounded (ray %g), solver %d\n", t, ray,
					    rc);
			assert_int_equal(rc, 1);
			unbounded++;
			continue;
		}
		double want = ref_max(m, n, A, b, c);
		if (rc != 0 || fabs(obj - want) > 1e-7 * fmax(1, fabs(want)))
			print_error(
				"instance %d (%zu x %zu): solver %d obj %.12g, reference %.12g\n",
				t, m, n, rc, obj, want);
		assert_int_equal(rc, 0);
		assert_true(fabs(obj - want) <= 1e-7 * fmax(1, fabs(want)));
		assert_true(violation(m, n, A, b, x) <= 1e-9);
		assert_true(fabs(obj - dot(n, c, x)) <= 1e-12 * (1 + fabs(obj)));
		bounded++;
	}
	printf("lp random small: %d bounded, %d unbounded, %d too close to call\n", bounded,
	       unbounded, skipped);
	assert_true(bounded > N / 3 && unbounded > N / 20 && skipped < N / 100);
}

/* ------------------------------------------------------------------------ */
/* larger random LPs */

/* A random LP like ours: sparse A in [-1, 2] (a fraction dens non-zero),
 * a fraction zb of b zero, the rest in [0, 3], c in [-1, 2]; the last row
 * sum x <= cols / 4 keeps it bounded. */
static void random_lp(struct xp_rng *g, size_t m, size_t n, double dens, double zb, double *A,
		      double *b, double *c)
{
	for (size_t i = 0; i < m * n; i++)
		A[i] = xp_rng_double(g) < dens ? uniform(g, -1, 2) : 0;
	for (size_t i = 0; i < m; i++)
		b[i] = xp_rng_double(g) < zb ? 0 : uniform(g, 0, 3);
	for (size_t j = 0; j < n; j++) {
		c[j] = uniform(g, -1, 2);
		A[(m - 1) * n + j] = 1;
	}
	b[m - 1] = (double)n / 4;
}

static void test_random_large(void **st)
{
	(void)st;
	enum { M = 200, N = 300 };
	struct xp_rng g;
	double *A = xmalloc(M * N * sizeof(double)), *b = xmalloc(M * sizeof(double));
	double *c = xmalloc(N * sizeof(double)), *x = xmalloc(N * sizeof(double));
	double *A2 = xmalloc(M * N * sizeof(double)), *b2 = xmalloc(M * sizeof(double));
	double *c2 = xmalloc(N * sizeof(double)), *x2 = xmalloc(N * sizeof(double));
	double *y = xmalloc(N * sizeof(double));
	uint32_t pr[M], pc[N];

	int positive = 0;
	xp_rng_seed(&g, 7);
	for (int round = 0; round < 8; round++) {
		/* even rounds: 20 % dense, 10 % of b zero; odd: 40 % and a
		 * third, where the origin is often optimal but hard to prove */
		if (round & 1)
			random_lp(&g, M, N, 0.4, 1.0 / 3, A, b, c);
		else
			random_lp(&g, M, N, 0.2, 0.1, A, b, c);
		double obj = solve_ok(M, N, A, b, c, x);
		positive += obj > 0;

		/* random feasible points: a few positive coordinates, scaled
		 * back into the polytope; none may beat the optimum */
		int beaten = 0;
		for (int p = 0; p < 200; p++) {
			memset(y, 0, N * sizeof(double));
			size_t nz = 1 + xp_rng_below(&g, 4);
			for (size_t q = 0; q < nz; q++)
				y[xp_rng_below(&g, N)] = xp_rng_double(&g);
			double alpha = INFINITY;
			for (size_t i = 0; i < M; i++) {
				double s = dot(N, A + i * N, y);
				if (s > 0 && b[i] / s < alpha)
					alpha = b[i] / s;
			}
			if (alpha == INFINITY)
				continue;
			for (size_t j = 0; j < N; j++)
				y[j] *= alpha;
			assert_true(violation(M, N, A, b, y) <= 1e-12);
			beaten += dot(N, c, y) > obj + 1e-7 * fmax(1, obj);
		}
		assert_int_equal(beaten, 0);

		/* the same LP with rows and columns permuted: another pivot
		 * path, the same optimum */
		xp_rng_perm(&g, pr, M);
		xp_rng_perm(&g, pc, N);
		for (size_t i = 0; i < M; i++) {
			b2[i] = b[pr[i]];
			for (size_t j = 0; j < N; j++)
				A2[i * N + j] = A[pr[i] * N + pc[j]];
		}
		for (size_t j = 0; j < N; j++)
			c2[j] = c[pc[j]];
		double obj2 = solve_ok(M, N, A2, b2, c2, x2);
		assert_true(fabs(obj - obj2) <= 1e-7 * fmax(1, obj));
	}
	assert_true(positive >= 4);
	free(A);
	free(b);
	free(c);
	free(x);
	free(A2);
	free(b2);
	free(c2);
	free(x2);
	free(y);
}

/* ------------------------------------------------------------------------ */
/* timing (printed, not asserted) */

static double time_solves(size_t m, size_t n, const double *A, const double *b, const double *c,
			  double *x, double *obj)
{
	int reps = 0;
	uint64_t t0 = xp_mono_ns(), t1;
	do {
		assert_int_equal(xp_lp_max(m, n, A, b, c, x, obj), 0);
		reps++;
		t1 = xp_mono_ns();
	} while (t1 - t0 < 200000000 && reps < 1000);
	return (double)(t1 - t0) / reps / 1e6;
}

static void test_timing(void **st)
{
	(void)st;
	struct xp_rng g;
	xp_rng_seed(&g, 99);

	/* random sparse 250 x 400, as in test_random_large */
	static const double shapes[][2] = { { 0.2, 0.1 }, { 0.4, 1.0 / 3 } };
	for (size_t z = 0; z < NELEM(shapes); z++) {
		enum { M = 250, N = 400 };
		double *A = xmalloc(M * N * sizeof(double)), *b = xmalloc(M * sizeof(double));
		double *c = xmalloc(N * sizeof(double)), *x = xmalloc(N * sizeof(double)), obj;
		random_lp(&g, M, N, shapes[z][0], shapes[z][1], A, b, c);
		double ms = time_solves(M, N, A, b, c, x, &obj);
		printf("lp timing: random %d x %d, %.0f %% dense, %.0f %% of b zero: %.3f ms a "
		       "solve "
		       "(obj %.6g)\n",
		       M, N, 100 * shapes[z][0], 100 * shapes[z][1], ms, obj);
		free(A);
		free(b);
		free(c);
		free(x);
	}
	/* fairness LPs: 100 jobs x 4 types (204 x 401), 125 x 3 (253 x 376),
	 * 250 x 4 (504 x 1001), random throughputs and capacities */
	static const size_t sizes[][2] = { { 100, 4 }, { 125, 3 }, { 250, 4 } };
	for (size_t z = 0; z < NELEM(sizes); z++) {
		size_t J = sizes[z][0], K = sizes[z][1], n = 1 + J * K, m = 2 * J + K;
		double *a = xmalloc(J * K * sizeof(double)), cap[8];
		for (size_t i = 0; i < J * K; i++)
			a[i] = uniform(&g, 0.2, 3);
		for (size_t k = 0; k < K; k++)
			cap[k] = (double)(J / 4 + xp_rng_below(&g, J / 4));
		double *A = xmalloc(m * n * sizeof(double)), *b = xmalloc(m * sizeof(double));
		double *c = xmalloc(n * sizeof(double)), *x = xmalloc(n * sizeof(double)), obj;
		fairness(J, K, a, cap, A, b, c);
		double ms = time_solves(m, n, A, b, c, x, &obj);
		assert_true(violation(m, n, A, b, x) <= 1e-9);
		printf("lp timing: fairness %zu jobs x %zu types (%zu x %zu): %.3f ms a solve "
		       "(t %.6g)\n",
		       J, K, m, n, ms, obj);
		free(a);
		free(A);
		free(b);
		free(c);
		free(x);
	}
}

/* ------------------------------------------------------------------------ */
/* lpcentral: the interior point of the same max-min LPs */

/* random fairness LPs: the central point is feasible and as good as the
 * simplex's optimum; every item gets t */
static void test_central_random(void **st)
{
	(void)st;
	struct xp_rng g;
	xp_rng_seed(&g, 4242);
	for (int it = 0; it < 60; it++) {
		size_t J = 2 + xp_rng_below(&g, 30), K = 1 + xp_rng_below(&g, 4);
		size_t n = 1 + J * K, m = 2 * J + K;
		double *a = xmalloc(J * K * sizeof(double)), cap[4];
		for (size_t i = 0; i < J * K; i++)
			a[i] = xp_rng_below(&g, 5) ? uniform(&g, 0.1, 3) : 0;
		for (size_t j = 0; j < J; j++)
			a[j * K] += 0.05; /* every item can run somewhere */
		for (size_t k = 0; k < K; k++)
			cap[k] = 1 + (double)xp_rng_below(&g, J);
		double *A = xmalloc(m * n * sizeof(double)), *b = xmalloc(m * sizeof(double));
		double *c = xmalloc(n * sizeof(double)), *x = xmalloc(n * sizeof(double));
		double *y = xmalloc(n * sizeof(double)), obj;
		double *wr = xmalloc(m * sizeof(double)), *wc = xmalloc(n * sizeof(double));
		for (size_t i = 0; i < m; i++)
			wr[i] = 1;
		for (size_t j = 0; j < n; j++)
			wc[j] = 1;
		fairness(J, K, a, cap, A, b, c);
		assert_int_equal(xp_lp_max(m, n, A, b, c, x, &obj), 0);
		assert_int_equal(xp_lp_central(m, n, 0, A, b, wr, wc, y), 0);
		assert_true(violation(m, n, A, b, y) <= 1e-7);
		assert_true(fabs(y[0] - obj) <= 1e-6 * fmax(1, obj));
		/* strictly inside: every share positive */
		for (size_t j = 1; j < n; j++)
			assert_true(y[j] > 0);
		free(a);
		free(A);
		free(b);
		free(c);
		free(x);
		free(y);
		free(wr);
		free(wc);
	}
}

/* identical items: the simplex picks a vertex that favours some of them;
 * the central point gives all the same shares, as ECOS does */
static void test_central_symmetric(void **st)
{
	(void)st;
	size_t J = 12, K = 3, n = 1 + J * K, m = 2 * J + K;
	double a[12 * 3], cap[3] = { 4, 4, 4 };
	for (size_t j = 0; j < J; j++) {
		a[j * K] = 3;
		a[j * K + 1] = 2;
		a[j * K + 2] = 1;
	}
	double A[(2 * 12 + 3) * (1 + 12 * 3)], b[2 * 12 + 3], c[1 + 12 * 3], y[1 + 12 * 3];
	double wr[2 * 12 + 3], wc[1 + 12 * 3];
	for (size_t i = 0; i < m; i++)
		wr[i] = 1;
	for (size_t j = 0; j < n; j++)
		wc[j] = 1;
	fairness(J, K, a, cap, A, b, c);
	assert_int_equal(xp_lp_central(m, n, 0, A, b, wr, wc, y), 0);
	/* each item gets a third of the pool's throughput: (3+2+1) x 4 / 12 */
	assert_true(fabs(y[0] - 2) < 1e-6);
	for (size_t j = 1; j < J; j++)
		for (size_t k = 0; k < K; k++)
			assert_true(fabs(y[1 + j * K + k] - y[1 + k]) < 1e-6);
	/* a class-level LP with weight 12 gives the same shares x 12 */
	double A1[(2 + 3) * (1 + 3)], b1[2 + 3], c1[1 + 3], y1[1 + 3], wr1[5], wc1[4];
	double a1[3] = { 3.0 / 12, 2.0 / 12, 1.0 / 12 }, cap1[3] = { 4, 4, 4 };
	fairness(1, K, a1, cap1, A1, b1, c1);
	b1[1 + K] = 12; /* the class's twelve shares */
	wr1[0] = wr1[1 + K] = 12;
	wr1[1] = wr1[2] = wr1[3] = 1;
	wc1[0] = 1;
	wc1[1] = wc1[2] = wc1[3] = 12;
	assert_int_equal(xp_lp_central(2 + K, 1 + K, 0, A1, b1, wr1, wc1, y1), 0);
	assert_true(fabs(y1[0] - 2) < 1e-6);
	for (size_t k = 0; k < K; k++)
		assert_true(fabs(y1[1 + k] - 12 * y[1 + k]) < 1e-5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_textbook),     cmocka_unit_test(test_unbounded),
		cmocka_unit_test(test_degenerate),   cmocka_unit_test(test_fairness),
		cmocka_unit_test(test_bad_input),    cmocka_unit_test(test_random_small),
		cmocka_unit_test(test_random_large), cmocka_unit_test(test_timing),
		cmocka_unit_test(test_central_random), cmocka_unit_test(test_central_symmetric),
	};
	return xp_run_tests(tests, NULL, NULL);
}
