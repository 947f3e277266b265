/*
 * lp: a small dense linear-programme solver for problems whose origin is
 * feasible (every b_i >= 0), such as max-min fair shares of a pool:
 *
 *   maximise c.x  subject to  A x <= b,  x >= 0.
 *
 * A dense primal simplex on a condensed tableau, starting from the slack
 * basis (no phase one), made safe against our LPs' heavy degeneracy by
 * perturbing b and cleaning up with a few dual pivots (see lp.c). Sized for
 * a few hundred rows and up to a thousand or so columns, solved many times a
 * scheduling pass. Pure: numbers in, numbers out; the inputs are borrowed
 * and not modified.
 */
#ifndef XP_LP_H
#define XP_LP_H

#include <stddef.h>

/* maximise c.x subject to A x <= b, x >= 0, with b >= 0 (the origin is feasible).
 * A is rows x cols, row-major. On success writes x[cols] and *obj, returns 0;
 * returns 1 if unbounded, -1 on bad input (b<0, NaN, sizes 0) or iteration limit.
 * x and *obj are written only when 0 is returned; infinities and NULL
 * pointers are bad input too. */
int xp_lp_max(size_t rows, size_t cols, const double *A, const double *b, const double *c,
	      double *x, double *obj);

#endif
