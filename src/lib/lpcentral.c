/*
 * lpcentral: the weighted central path of a max-min LP, followed by damped
 * Newton steps on the barrier (lpcentral.h). The Newton system is solved
 * through its rows: H = D + A^T W A with D diagonal over the columns, so
 * by Woodbury only a rows x rows matrix is factored (Cholesky) per step.
 */
#include "lpcentral.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* Cholesky of the n x n matrix a in place (lower); 0, or -1 if not PD */
static int chol(double *a, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		double d = a[j * n + j];
		for (size_t k = 0; k < j; k++)
			d -= a[j * n + k] * a[j * n + k];
		if (!(d > 0))
			return -1;
		d = sqrt(d);
		a[j * n + j] = d;
		for (size_t i = j + 1; i < n; i++) {
			double v = a[i * n + j];
			for (size_t k = 0; k < j; k++)
				v -= a[i * n + k] * a[j * n + k];
			a[i * n + j] = v / d;
		}
	}
	return 0;
}

static void chol_solve(const double *l, size_t n, double *v)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < i; k++)
			v[i] -= l[i * n + k] * v[k];
		v[i] /= l[i * n + i];
	}
	for (size_t i = n; i-- > 0;) {
		for (size_t k = i + 1; k < n; k++)
			v[i] -= l[k * n + i] * v[k];
		v[i] /= l[i * n + i];
	}
}

static double barrier(size_t rows, size_t cols, size_t tcol, double mu, const double *x,
		      const double *s, const double *wr, const double *wc,
		      const unsigned char *fixed)
{
	double f = x[tcol] / mu;
	for (size_t j = 0; j < cols; j++)
		if (!fixed[j])
			f += wc[j] * log(x[j]);
	for (size_t i = 0; i < rows; i++)
		if (wr[i] > 0)
			f += wr[i] * log(s[i]);
	return f;
}

int xp_lp_central(size_t rows, size_t cols, size_t tcol, const double *A, const double *b,
		   const double *wr, const double *wc, double *x)
{
	/* A by columns */
	size_t *cp = xcalloc(cols + 1, sizeof(size_t)), nnz = 0;
	for (size_t j = 0; j < cols; j++)
		for (size_t i = 0; i < rows; i++)
			nnz += A[i * cols + j] != 0;
	size_t *ri = xcalloc(nnz + 1, sizeof(size_t));
	double *av = xcalloc(nnz + 1, sizeof(double));
	unsigned char *fixed = xcalloc(cols, 1);
	double *s = xcalloc(rows, sizeof(double)), *g = xcalloc(cols, sizeof(double));
	double *d = xcalloc(cols, sizeof(double)), *u = xcalloc(rows, sizeof(double));
	double *ds = xcalloc(rows, sizeof(double)), *sn = xcalloc(rows, sizeof(double));
	double *xn = xcalloc(cols, sizeof(double));
	double *M = xcalloc(rows * rows, sizeof(double)), x0 = INFINITY, wsum = 0;
	double *w = xcalloc(rows, sizeof(double)); /* wr, 0 for a row that only bounds 0s */
	int rc = 0;
	for (size_t i = 0; i < rows; i++)
		w[i] = b[i] == 0 && A[i * cols + tcol] == 0 ? 0 : wr[i];
	nnz = 0;
	for (size_t j = 0; j < cols; j++) {
		cp[j] = nnz;
		for (size_t i = 0; i < rows; i++)
			if (A[i * cols + j] != 0) {
				ri[nnz] = i;
				av[nnz++] = A[i * cols + j];
				if (A[i * cols + j] > 0 && b[i] == 0 && A[i * cols + tcol] == 0)
					fixed[j] = 1;
			}
	}
	cp[cols] = nnz;
	for (size_t i = 0; i < rows; i++) {
		double sum = 0;
		for (size_t j = 0; j < cols; j++)
			if (j != tcol && A[i * cols + j] > 0)
				sum += A[i * cols + j];
		if (b[i] > 0 && sum > 0 && b[i] / sum < x0)
			x0 = b[i] / sum;
		wsum += w[i];
	}
	for (size_t j = 0; j < cols; j++) {
		x[j] = fixed[j] || j == tcol ? 0 : x0 / 2;
		wsum += fixed[j] ? 0 : wc[j];
	}
	double t0 = INFINITY;
	for (size_t i = 0; i < rows; i++)
		if (A[i * cols + tcol] > 0) {
			double v = 0;
			for (size_t j = 0; j < cols; j++)
				v -= A[i * cols + j] * x[j];
			if (!(v > 0))
				rc = -1;
			else if (v / A[i * cols + tcol] < t0)
				t0 = v / A[i * cols + tcol];
		}
	x[tcol] = t0 / 2;
	for (double mu = 1; !rc && mu * wsum > 1e-8; mu /= 10)
		for (int it = 0; it < 60; it++) {
			for (size_t i = 0; i < rows; i++)
				s[i] = b[i];
			for (size_t j = 0; j < cols; j++)
				for (size_t p = cp[j]; p < cp[j + 1]; p++)
					s[ri[p]] -= av[p] * x[j];
			/* g = grad, D = wc / x^2, M = diag(s^2 / wr) + A D^-1 A^T */
			memset(M, 0, rows * rows * sizeof(double));
			memset(u, 0, rows * sizeof(double));
			for (size_t i = 0; i < rows; i++)
				M[i * rows + i] = w[i] > 0 ? s[i] * s[i] / w[i] : 1;
			for (size_t j = 0; j < cols; j++) {
				if (fixed[j])
					continue;
				g[j] = (j == tcol ? 1 / mu : 0) + wc[j] / x[j];
				double di = x[j] * x[j] / wc[j];
				for (size_t p = cp[j]; p < cp[j + 1]; p++) {
					g[j] -= av[p] * w[ri[p]] / s[ri[p]];
					for (size_t q = cp[j]; q < cp[j + 1]; q++)
						if (ri[q] <= ri[p])
							M[ri[p] * rows + ri[q]] +=
								av[p] * av[q] * di;
				}
				for (size_t p = cp[j]; p < cp[j + 1]; p++)
					u[ri[p]] += av[p] * g[j] * di;
			}
			if (chol(M, rows) < 0) {
				rc = mu < 1 ? 0 : -1;
				goto out;
			}
			/* d = D^-1 g - D^-1 A^T M^-1 A D^-1 g */
			chol_solve(M, rows, u);
			double lam2 = 0, amax = 1;
			memset(ds, 0, rows * sizeof(double));
			for (size_t j = 0; j < cols; j++) {
				if (fixed[j]) {
					d[j] = 0;
					continue;
				}
				double v = g[j];
				for (size_t p = cp[j]; p < cp[j + 1]; p++)
					v -= av[p] * u[ri[p]];
				d[j] = v * x[j] * x[j] / wc[j];
				lam2 += g[j] * d[j];
				if (d[j] < 0 && -x[j] / d[j] < amax)
					amax = -x[j] / d[j];
				for (size_t p = cp[j]; p < cp[j + 1]; p++)
					ds[ri[p]] -= av[p] * d[j];
			}
			for (size_t i = 0; i < rows; i++)
				if (w[i] > 0 && ds[i] < 0 && -s[i] / ds[i] < amax)
					amax = -s[i] / ds[i];
			if (!isfinite(lam2)) {
				rc = mu < 1 ? 0 : -1;
				goto out;
			}
			/* backtracking from 0.95 of the way to the boundary */
			double a = amax < 1 ? 0.95 * amax : 1;
			double f0 = barrier(rows, cols, tcol, mu, x, s, w, wc, fixed);
			for (int bt = 0; bt < 40; bt++, a /= 2) {
				for (size_t j = 0; j < cols; j++)
					xn[j] = x[j] + a * d[j];
				for (size_t i = 0; i < rows; i++)
					sn[i] = s[i] + a * ds[i];
				if (barrier(rows, cols, tcol, mu, xn, sn, w, wc, fixed) >=
				    f0 + 0.01 * a * lam2)
					break;
			}
			memcpy(x, xn, cols * sizeof(double));
			if (lam2 < (mu * 10 * wsum > 1e-8 ? 1e-2 : 1e-10))
				break;
		}
out:
	free(cp);
	free(ri);
	free(av);
	free(fixed);
	free(s);
	free(g);
	free(d);
	free(u);
	free(ds);
	free(sn);
	free(xn);
	free(w);
	free(M);
	return rc;
}

