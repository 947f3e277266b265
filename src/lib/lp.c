/*
 * lp: dense primal simplex for max c.x, A x <= b, x >= 0, b >= 0 (see lp.h).
 *
 * The tableau is the condensed (Tucker) form: one column per non-basic
 * variable, not per variable, so a pivot costs rows x cols rather than
 * rows x (rows + cols). Row i reads
 *
 *   basic[i] = t[i][rhs] - sum_j t[i][j] * nonb[j]
 *
 * and the extra row m holds the negated reduced costs (-z in the right-hand
 * side columns). Variables 0..n-1 are the x, n..n+m-1 the slacks; the slacks
 * start basic, which is feasible because b >= 0, so there is no phase one.
 * Rows, then columns, are first scaled by powers of two so that the largest
 * magnitude in each is about 1 (exact, and undone on x).
 *
 * Degeneracy. Our LPs are very degenerate (many b_i = 0 rows). Measured on
 * random 200-300 x 100-450 LPs like ours: Dantzig's rule with a plain ratio
 * test cycles on them; Bland's rule cannot cycle but stalls, often into the
 * iteration limit of 50 * (rows + cols); the lexicographic rule, exact in
 * theory, is decided by round-off in floating point and cycles too. So the
 * solver does what production codes do:
 *
 *  1. It solves with a perturbed right-hand side b_i + e_i (column P), e_i
 *     a fixed pseudo-random LP_PERTURB * (1 + b_i) * [1, 2). That problem
 *     has no degenerate vertex (but by a fluke of round-off), so Dantzig's
 *     rule (most negative t[m][j] enters) moves its objective at every
 *     pivot and cannot cycle.
 *  2. The true right-hand side rides along as a second column (O), updated
 *     by every pivot like any other column. The basis optimal for P has
 *     reduced costs <= 0, which do not depend on b; if O is >= 0 too, it is
 *     optimal. Where O is negative (the perturbation moved the optimal
 *     vertex, which takes a b within about e of degenerate) a dual simplex
 *     on O restores feasibility keeping the reduced costs <= 0; a final
 *     primal pass on O mops up round-off. Both normally take no pivots.
 *  3. As a last resort, a run of LP_BLAND_MUL * (rows + cols) degenerate
 *     primal pivots switches to Bland's rule (lowest variable index enters,
 *     lowest basic index leaves among ties) until a pivot moves the
 *     objective. Bland's rule cannot cycle and moving the objective never
 *     returns to an earlier basis, so no primal pass cycles; the iteration
 *     limit, shared by all passes, guards against numerical trouble.
 *
 * Numerics. Tolerances are relative: a reduced cost counts when it exceeds
 * LP_EPS * max|c|, a pivot element when it exceeds LP_PIV times the largest
 * magnitude in its column (row, in the dual). Among rows tied in the ratio
 * test the largest pivot element leaves. Round-off below zero in P is set
 * to zero; values of O under LP_EPS_B * max(1, max b) are set to zero in
 * the primal passes and count as degenerate.
 */
#include "lp.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "xalloc.h"

#define LP_EPS	     1e-9  /* reduced costs, relative to max|c| */
#define LP_PIV	     1e-9  /* pivot elements, relative to their column or row */
#define LP_EPS_B     1e-11 /* right-hand sides, relative to max(1, max b) */
#define LP_TIE	     1e-12 /* relative slack when comparing ratios */
#define LP_PERTURB   1e-6  /* perturbation of b, relative to 1 + b_i */
#define LP_BLAND_MUL 2	   /* Bland after LP_BLAND_MUL * (rows + cols) degenerate pivots */
#define LP_ITER_MUL  50	   /* iteration limit: LP_ITER_MUL * (rows + cols), all phases */

struct lp_tab {
	size_t m, n, w; /* rows, columns, row stride (n + 2) */
	double *t;	/* (m + 1) x w; column n is P, n + 1 is O */
	size_t *basic;	/* variable of each row */
	size_t *nonb;	/* variable of each column */
	size_t *nz;	/* scratch: non-zero columns of the pivot row */
	double *cscale; /* x_j = cscale[j] * (the scaled problem's x_j) */
	double eps_d;	/* reduced-cost tolerance */
	double eps_b;	/* right-hand-side tolerance */
	size_t iters, limit;
};

/* A fixed pseudo-random number in [0, 1) for each i (splitmix64). */
static double lp_noise(uint64_t i)
{
	uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1.0p-53;
}

static int bad_input(size_t m, size_t n, const double *A, const double *b, const double *c)
{
	if (!m || !n || !A || !b || !c)
		return 1;
	if (m >= SIZE_MAX / 4 || n >= SIZE_MAX / 4 || n + 2 > SIZE_MAX / sizeof(double) / (m + 1))
		return 1;
	for (size_t i = 0; i < m * n; i++)
		if (!isfinite(A[i]))
			return 1;
	for (size_t i = 0; i < m; i++)
		if (!isfinite(b[i]) || b[i] < 0)
			return 1;
	for (size_t j = 0; j < n; j++)
		if (!isfinite(c[j]))
			return 1;
	return 0;
}

/* 2^-k with 2^k nearest to v > 0: scaling by it is exact */
static double pow2_inv(double v)
{
	int e;
	double f = frexp(v, &e); /* v = f * 2^e, f in [0.5, 1) */
	return ldexp(1, f < 0.70710678118654752 ? 1 - e : -e);
}

/*
 * The tableau of the scaled problem: each row of A divided by a power of
 * two near its largest magnitude, then each column likewise, so that no
 * magnitude exceeds about 1 and tolerances mean the same everywhere.
 */
static void lp_init(struct lp_tab *lp, size_t m, size_t n, const double *A, const double *b,
		    const double *c)
{
	double bmax = 0, cmax = 0;

	lp->m = m;
	lp->n = n;
	lp->w = n + 2;
	lp->t = xmalloc((m + 1) * lp->w * sizeof(double));
	lp->basic = xmalloc(m * sizeof(size_t));
	lp->nonb = xmalloc(n * sizeof(size_t));
	lp->nz = xmalloc(lp->w * sizeof(size_t));
	lp->cscale = xmalloc(n * sizeof(double));
	for (size_t j = 0; j < n; j++)
		lp->cscale[j] = 0;
	for (size_t i = 0; i < m; i++) {
		double *row = lp->t + i * lp->w, amax = 0;
		for (size_t j = 0; j < n; j++)
			if (fabs(A[i * n + j]) > amax)
				amax = fabs(A[i * n + j]);
		double rs = amax > 0 ? pow2_inv(amax) : 1;
		for (size_t j = 0; j < n; j++) {
			row[j] = A[i * n + j] * rs;
			if (fabs(row[j]) > lp->cscale[j])
				lp->cscale[j] = fabs(row[j]);
		}
		row[n + 1] = b[i] * rs;
		if (row[n + 1] > bmax)
			bmax = row[n + 1];
	}
	for (size_t j = 0; j < n; j++)
		lp->cscale[j] = lp->cscale[j] > 0 ? pow2_inv(lp->cscale[j]) : 1;
	lp->eps_b = LP_EPS_B * (bmax > 1 ? bmax : 1);
	for (size_t i = 0; i < m; i++) {
		double *row = lp->t + i * lp->w;
		for (size_t j = 0; j < n; j++)
			row[j] *= lp->cscale[j];
		if (row[n + 1] < lp->eps_b)
			row[n + 1] = 0;
		row[n] = row[n + 1] + LP_PERTURB * (1 + row[n + 1]) * (1 + lp_noise(i));
		lp->basic[i] = n + i;
	}
	double *z = lp->t + m * lp->w;
	for (size_t j = 0; j < n; j++) {
		z[j] = -c[j] * lp->cscale[j];
		lp->nonb[j] = j;
		if (fabs(z[j]) > cmax)
			cmax = fabs(z[j]);
	}
	z[n] = z[n + 1] = 0;
	lp->eps_d = LP_EPS * cmax;
	lp->iters = 0;
	lp->limit = m + n > SIZE_MAX / LP_ITER_MUL ? SIZE_MAX : (m + n) * LP_ITER_MUL;
}

static void lp_free(struct lp_tab *lp)
{
	free(lp->t);
	free(lp->basic);
	free(lp->nonb);
	free(lp->nz);
	free(lp->cscale);
}

/* row -= f * pr, over all w entries: unrolled, as -O2 does not vectorise */
static void axpy_dense(double *restrict row, double f, const double *restrict pr, size_t w)
{
	size_t j = 0;
	for (; j + 4 <= w; j += 4) {
		double a0 = row[j] - f * pr[j], a1 = row[j + 1] - f * pr[j + 1];
		double a2 = row[j + 2] - f * pr[j + 2], a3 = row[j + 3] - f * pr[j + 3];
		row[j] = a0;
		row[j + 1] = a1;
		row[j + 2] = a2;
		row[j + 3] = a3;
	}
	for (; j < w; j++)
		row[j] -= f * pr[j];
}

/* Exchange basic[r] and nonb[s]. Pivot rows of our sparse LPs are mostly
 * zero, so when few entries are non-zero only those are updated. */
static void lp_pivot(struct lp_tab *lp, size_t r, size_t s)
{
	size_t w = lp->w, nz = 0;
	double *restrict pr = lp->t + r * w;
	double inv = 1 / pr[s];

	for (size_t j = 0; j < w; j++)
		pr[j] *= inv;
	pr[s] = inv;
	for (size_t j = 0; j < w; j++)
		if (pr[j] != 0)
			lp->nz[nz++] = j;
	int sparse = nz < w / 3;
	for (size_t i = 0; i <= lp->m; i++) {
		if (i == r || lp->t[i * w + s] == 0)
			continue;
		double *restrict pi = lp->t + i * w;
		double f = pi[s];
		pi[s] = 0;
		if (sparse)
			for (size_t q = 0; q < nz; q++)
				pi[lp->nz[q]] -= f * pr[lp->nz[q]];
		else
			axpy_dense(pi, f, pr, w);
	}
	size_t v = lp->basic[r];
	lp->basic[r] = lp->nonb[s];
	lp->nonb[s] = v;
}

/* The entering column, or n when the basis is optimal. */
static size_t lp_enter(const struct lp_tab *lp, int bland)
{
	const double *z = lp->t + lp->m * lp->w;
	size_t s = lp->n;
	double best = -lp->eps_d;

	for (size_t j = 0; j < lp->n; j++) {
		if (!(z[j] < -lp->eps_d))
			continue;
		if (bland ? s == lp->n || lp->nonb[j] < lp->nonb[s] : z[j] < best) {
			s = j;
			best = z[j];
		}
	}
	return s;
}

/* The leaving row for entering column s with right-hand side column col,
 * or m when the column is unbounded. */
static size_t lp_leave(const struct lp_tab *lp, size_t s, size_t col, int bland)
{
	size_t m = lp->m, w = lp->w, r = m;
	double colmax = 0, theta = INFINITY;

	for (size_t i = 0; i < m; i++) {
		double a = fabs(lp->t[i * w + s]);
		if (a > colmax)
			colmax = a;
	}
	double tol = LP_PIV * colmax;
	for (size_t i = 0; i < m; i++) {
		double a = lp->t[i * w + s];
		if (a > tol && lp->t[i * w + col] / a < theta)
			theta = lp->t[i * w + col] / a;
	}
	if (theta == INFINITY)
		return m;
	double lim = theta + LP_TIE * (1 + theta);
	for (size_t i = 0; i < m; i++) {
		double a = lp->t[i * w + s];
		if (!(a > tol) || lp->t[i * w + col] / a > lim)
			continue;
		if (r == m || (bland ? lp->basic[i] < lp->basic[r] : a > lp->t[r * w + s]))
			r = i;
	}
	return r;
}

/* Round-off below zero in P, and anything under eps_b in O, becomes 0. */
static void lp_clamp(struct lp_tab *lp, size_t col)
{
	double lo = col == lp->n ? 0 : lp->eps_b;
	for (size_t i = 0; i < lp->m; i++)
		if (lp->t[i * lp->w + col] < lo)
			lp->t[i * lp->w + col] = 0;
}

/*
 * Primal simplex on right-hand side column col (>= 0 once clamped).
 * Returns 0 at an optimum, 1 if unbounded, -1 at the iteration limit.
 */
static int lp_primal(struct lp_tab *lp, size_t col)
{
	size_t m = lp->m, w = lp->w, degen = 0, run = LP_BLAND_MUL * (lp->m + lp->n);

	lp_clamp(lp, col);
	for (;;) {
		int bland = degen >= run;
		size_t s = lp_enter(lp, bland);
		if (s == lp->n)
			return 0;
		if (lp->iters++ >= lp->limit)
			return -1;
		size_t r = lp_leave(lp, s, col, bland);
		if (r == m)
			return 1;
		degen = lp->t[r * w + col] <= lp->eps_b ? degen + 1 : 0;
		lp_pivot(lp, r, s);
		lp_clamp(lp, col);
	}
}

/*
 * Dual simplex on right-hand side column col from a basis whose reduced
 * costs are <= 0: pivots out the most negative row until col is >= -eps_b.
 * Returns 0, or -1 at the iteration limit or if a row cannot be repaired
 * (an infeasible LP, which with b >= 0 only round-off can produce).
 */
static int lp_dual(struct lp_tab *lp, size_t col)
{
	size_t m = lp->m, n = lp->n, w = lp->w;
	const double *z = lp->t + m * w;

	for (;;) {
		size_t r = m;
		for (size_t i = 0; i < m; i++)
			if (lp->t[i * w + col] < -lp->eps_b &&
			    (r == m || lp->t[i * w + col] < lp->t[r * w + col]))
				r = i;
		if (r == m)
			return 0;
		if (lp->iters++ >= lp->limit)
			return -1;
		const double *pr = lp->t + r * w;
		double rowmax = 0, best = INFINITY;
		for (size_t j = 0; j < n; j++)
			if (fabs(pr[j]) > rowmax)
				rowmax = fabs(pr[j]);
		double tol = LP_PIV * rowmax;
		for (size_t j = 0; j < n; j++)
			if (pr[j] < -tol && (z[j] > 0 ? z[j] : 0) / -pr[j] < best)
				best = (z[j] > 0 ? z[j] : 0) / -pr[j];
		if (best == INFINITY)
			return -1;
		double lim = best + LP_TIE * (1 + best);
		size_t s = n;
		for (size_t j = 0; j < n; j++)
			if (pr[j] < -tol && (z[j] > 0 ? z[j] : 0) / -pr[j] <= lim &&
			    (s == n || pr[j] < pr[s]))
				s = j;
		lp_pivot(lp, r, s);
	}
}

int xp_lp_max(size_t rows, size_t cols, const double *A, const double *b, const double *c,
	      double *x, double *obj)
{
	struct lp_tab lp;

	if (bad_input(rows, cols, A, b, c) || !x || !obj)
		return -1;
	lp_init(&lp, rows, cols, A, b, c);
	int ret = lp_primal(&lp, cols);
	if (ret == 0)
		ret = lp_dual(&lp, cols + 1);
	if (ret == 0)
		ret = lp_primal(&lp, cols + 1);
	if (ret == 0) {
		double z = 0;
		for (size_t j = 0; j < cols; j++)
			x[j] = 0;
		for (size_t i = 0; i < rows; i++) {
			double v = lp.t[i * lp.w + cols + 1];
			if (lp.basic[i] < cols)
				x[lp.basic[i]] = v > 0 ? v * lp.cscale[lp.basic[i]] : 0;
		}
		for (size_t j = 0; j < cols; j++)
			z += c[j] * x[j];
		*obj = z;
	}
	lp_free(&lp);
	return ret;
}
