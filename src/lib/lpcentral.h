/*
 * lpcentral: the optimum of a max-min LP that an interior-point solver
 * (ECOS, which Gavel's policies call through cvxpy) returns, rather than
 * the vertex the simplex (lp.h) returns.
 *
 *   maximise t = x[tcol]  subject to  A x <= b,  x >= 0
 *
 * Such LPs have a whole face of optimal points (every job but the
 * bottleneck ones has slack), and which one a solver returns changes what a
 * scheduler built on it does. A barrier method ends near the analytic
 * centre of that face: every column that can be positive at the optimum
 * is. This one maximises
 *
 *   t / mu + sum_j wc_j log x_j + sum_i wr_i log(b_i - A_i x)
 *
 * by damped Newton steps (the barrier is self-concordant for weights >= 1)
 * for mu = 1, 0.1, ... until the duality gap mu x (sum of weights) is 1e-8,
 * ECOS's default. The weights let an LP over classes of interchangeable
 * items stand for the LP over the items themselves: a class-level column
 * or row weighted by how many item-level ones it stands for has the same
 * central path, split evenly.
 *
 * The form it expects, that of max-min fairness: rows with A_i,tcol > 0 are
 * the fairness rows (t minus what an item gets, b_i = 0, the other
 * coefficients <= 0); the others have b_i >= 0 and bound the columns. It
 * starts from every column at half the largest equal share the bounding
 * rows allow and t at half what the fairness rows then allow. A column with
 * a positive coefficient in a bounding row whose b_i is 0 can only be 0 and
 * stays there. Pure numbers; the inputs are borrowed and not modified.
 */
#ifndef XP_LPCENTRAL_H
#define XP_LPCENTRAL_H

#include <stddef.h>

/* A is rows x cols, row-major; wr[rows], wc[cols] >= 1. Writes x[cols] and
 * returns 0, or returns -1 when there is no interior start or the first
 * Newton steps fail (x is then undefined; use the simplex). */
int xp_lp_central(size_t rows, size_t cols, size_t tcol, const double *A, const double *b,
		  const double *wr, const double *wc, double *x);

#endif
