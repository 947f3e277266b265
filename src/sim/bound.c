/*
 * bound: the LP upper bound on placeable device milli (bound.h,
 * docs/design/bound.md).
 *
 * Columns: y[s,t], requests of shape s on nodes of type t (only where one
 * node of t could take s alone), then z[c], accelerators packed with
 * fraction configuration c. Rows, all "<=" with b >= 0 so the origin is
 * feasible as lp.c needs:
 *
 *   shape s:        sum_t y[s,t]                          <= n_s
 *   type t, CPU:    sum_s cpu_s y[s,t]                    <= CPU of t's nodes
 *   type t, memory: sum_s mem_s y[s,t]                    <= memory of t's nodes
 *   type t, milli:  sum_s count_s milli_s y[s,t]          <= 1000 * devices of t
 *   type t, whole:  sum_{s whole} count_s y[s,t]          <= devices of t
 *   devices:        sum_c z[c] + sum_{s whole,t} count_s y[s,t] <= all devices
 *   fraction k:     sum_{s of size k,t} y[s,t] - sum_c a[c,k] z[c] <= 0
 *
 * maximising sum count_s milli_s y[s,t]. A shape groups requests alike in
 * all but host memory and takes the smallest memory among them (a
 * relaxation); "devices" are the accelerators (class not cpu).
 */
#include "bound.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/sched/sched.h"
#include "../lib/lp.h"
#include "../lib/xalloc.h"

#define MAX_SIZES   64
#define MAX_CONFIGS 6000

struct shape {
	struct xp_request req; /* mem_mib: the smallest of the group */
	double n;
};

struct ntype {
	uint32_t node; /* exemplar */
	double cpu, mem, devs;
};

struct lpb {
	size_t rows, cols;
	double *A, *b, *c;
};

static int accel(const struct xp_device *d)
{
	return d->cls != XP_CLASS_CPU;
}

static int same_type(const struct xp_node *a, const struct xp_node *b)
{
	if (a->cpu_milli != b->cpu_milli || a->mem_mib != b->mem_mib || a->ndevs != b->ndevs)
		return 0;
	for (uint16_t d = 0; d < a->ndevs; d++) {
		const struct xp_device *x = &a->devs[d], *y = &b->devs[d];
		if (x->cls != y->cls || x->model != y->model || x->vendor != y->vendor ||
		    x->mem_mib != y->mem_mib || x->cc != y->cc)
			return 0;
	}
	return 1;
}

static size_t node_types(const struct xp_cluster *c, struct ntype **out)
{
	struct ntype *t = NULL;
	size_t nt = 0;
	for (uint32_t i = 0; i < c->nnodes; i++) {
		const struct xp_node *nd = &c->nodes[i];
		size_t k;
		for (k = 0; k < nt; k++)
			if (same_type(&c->nodes[t[k].node], nd))
				break;
		if (k == nt) {
			t = xreallocarray(t, nt + 1, sizeof(*t));
			t[nt++] = (struct ntype){ .node = i };
		}
		t[k].cpu += (double)nd->cpu_milli;
		t[k].mem += (double)nd->mem_mib;
		for (uint16_t d = 0; d < nd->ndevs; d++)
			t[k].devs += accel(&nd->devs[d]);
	}
	*out = t;
	return nt;
}

static size_t group_shapes(const struct xp_request *r, size_t n, struct shape **out)
{
	struct shape *s = NULL;
	size_t ns = 0;
	for (size_t i = 0; i < n; i++) {
		size_t k;
		if (!r[i].dev_count || !r[i].dev_milli)
			continue;
		for (k = 0; k < ns; k++)
			if (xp_request_same_shape(&s[k].req, &r[i]))
				break;
		if (k == ns) {
			s = xreallocarray(s, ns + 1, sizeof(*s));
			s[ns++] = (struct shape){ .req = r[i] };
		}
		if (r[i].mem_mib < s[k].req.mem_mib)
			s[k].req.mem_mib = r[i].mem_mib;
		s[k].n += 1;
	}
	*out = s;
	return ns;
}

/* Could one node of type t take s alone? */
static int fits_type(const struct xp_cluster *c, const struct ntype *t, const struct shape *s)
{
	const struct xp_node *nd = &c->nodes[t->node];
	const struct xp_request *q = &s->req;
	uint32_t match = 0;
	if (q->cpu_milli > nd->cpu_milli || q->mem_mib > nd->mem_mib)
		return 0;
	for (uint16_t d = 0; d < nd->ndevs; d++)
		match += accel(&nd->devs[d]) && xp_selector_match(&q->sel, &nd->devs[d]) &&
			 nd->devs[d].mem_mib >= q->dev_mem_mib;
	return match >= q->dev_count;
}

static int is_fraction(const struct xp_request *q)
{
	return q->dev_count == 1 && q->dev_milli < XP_MILLI;
}

struct cfgs {
	const uint16_t *sizes;
	size_t k;
	uint16_t cur[MAX_SIZES];
	uint16_t *out; /* counts[c * k + i] */
	size_t n, cap, visits;
};

/* Maximal multisets of the sizes within 1000 milli; gives up (n past
 * MAX_CONFIGS) when there are too many or the walk is too long. */
static void configs_rec(struct cfgs *g, size_t i, int rem)
{
	if (g->n > MAX_CONFIGS || ++g->visits > 50 * MAX_CONFIGS) {
		g->n = MAX_CONFIGS + 1;
		return;
	}
	if (i == g->k) {
		for (size_t j = 0; j < g->k; j++)
			if (g->sizes[j] <= rem)
				return; /* not maximal: another fraction still fits */
		if (g->n == g->cap) {
			g->cap = g->cap ? 2 * g->cap : 256;
			g->out = xreallocarray(g->out, g->cap * g->k, sizeof(uint16_t));
		}
		memcpy(g->out + g->n * g->k, g->cur, g->k * sizeof(uint16_t));
		g->n++;
		return;
	}
	for (int a = 0; a * g->sizes[i] <= rem; a++) {
		g->cur[i] = (uint16_t)a;
		configs_rec(g, i + 1, rem - a * g->sizes[i]);
	}
	g->cur[i] = 0;
}

static void put(struct lpb *l, size_t row, size_t col, double v)
{
	l->A[row * l->cols + col] += v;
}

/* The rows over y: shapes, per type CPU / memory / milli / whole, devices. */
static void fill_y(struct lpb *l, const struct xp_cluster *c, const struct shape *s, size_t ns,
		   const struct ntype *t, size_t nt, const uint16_t *sizes, size_t nsz, size_t *col)
{
	size_t r_type = ns, r_dev = ns + 4 * nt, r_frac = r_dev + 1;
	for (size_t i = 0; i < ns; i++) {
		const struct xp_request *q = &s[i].req;
		double milli = (double)q->dev_count * q->dev_milli;
		l->b[i] = s[i].n;
		for (size_t k = 0; k < nt; k++) {
			if (!fits_type(c, &t[k], &s[i]))
				continue;
			put(l, i, *col, 1);
			put(l, r_type + 4 * k, *col, (double)q->cpu_milli);
			put(l, r_type + 4 * k + 1, *col, (double)q->mem_mib);
			put(l, r_type + 4 * k + 2, *col, milli);
			size_t z = 0;
			while (is_fraction(q) && z < nsz && sizes[z] != q->dev_milli)
				z++;
			if (q->dev_milli >= XP_MILLI) {
				put(l, r_type + 4 * k + 3, *col, q->dev_count);
				put(l, r_dev, *col, q->dev_count);
			} else if (is_fraction(q) && z < nsz) {
				put(l, r_frac + z, *col, 1);
			} else { /* no configurations for it: fluid */
				put(l, r_dev, *col, milli / XP_MILLI);
			}
			l->c[*col] = milli;
			(*col)++;
		}
	}
	for (size_t k = 0; k < nt; k++) {
		l->b[r_type + 4 * k] = t[k].cpu;
		l->b[r_type + 4 * k + 1] = t[k].mem;
		l->b[r_type + 4 * k + 2] = XP_MILLI * t[k].devs;
		l->b[r_type + 4 * k + 3] = t[k].devs;
		l->b[r_dev] += t[k].devs;
	}
}

/* Fraction sizes present, and their maximal configurations (0 if too many). */
static size_t fraction_sizes(const struct shape *s, size_t ns, uint16_t *sizes)
{
	size_t k = 0;
	for (size_t i = 0; i < ns; i++) {
		size_t j = 0;
		if (!is_fraction(&s[i].req))
			continue;
		while (j < k && sizes[j] != s[i].req.dev_milli)
			j++;
		if (j == k && k < MAX_SIZES)
			sizes[k++] = s[i].req.dev_milli;
	}
	return k;
}

int xp_bound_milli(const struct xp_cluster *c, const struct xp_request *r, size_t n, double *milli,
		   struct xp_bound_info *info, struct xp_err *err)
{
	struct shape *s;
	struct ntype *t;
	uint16_t sizes[MAX_SIZES];

	for (size_t i = 0; i < n; i++) /* its milli depends on the device it lands on */
		if (r[i].by_mem)
			return xp_errf(err, XP_EUNSUPP,
				       "request %zu is a share sized by memory, which the bound "
				       "does not model",
				       i);
	size_t ns = group_shapes(r, n, &s), nt = node_types(c, &t), ncfg = 0;
	size_t nsz = fraction_sizes(s, ns, sizes), ny = 0, col = 0;
	struct xp_bound_info bi = { .shapes = ns, .types = nt };
	struct cfgs g = { .sizes = sizes, .k = nsz };
	int rc = 0;

	if (nsz)
		configs_rec(&g, 0, XP_MILLI);
	ncfg = g.n;
	const uint16_t *cfg = g.out;
	if (ncfg > MAX_CONFIGS) {
		bi.configs_dropped = 1;
		nsz = ncfg = 0;
	}
	for (size_t i = 0; i < ns; i++)
		for (size_t k = 0; k < nt; k++)
			ny += fits_type(c, &t[k], &s[i]);
	struct lpb l = { .rows = ns + 4 * nt + 1 + nsz, .cols = ny + ncfg };
	bi.configs = ncfg;
	bi.rows = l.rows;
	bi.cols = l.cols;
	*milli = 0;
	if (l.cols && ny) {
		l.A = xcalloc(l.rows * l.cols, sizeof(double));
		l.b = xcalloc(l.rows, sizeof(double));
		l.c = xcalloc(l.cols, sizeof(double));
		double *x = xcalloc(l.cols, sizeof(double)), obj = 0;
		fill_y(&l, c, s, ns, t, nt, sizes, nsz, &col);
		for (size_t j = 0; j < ncfg; j++, col++) {
			put(&l, ns + 4 * nt, col, 1);
			for (size_t z = 0; z < nsz; z++)
				put(&l, ns + 4 * nt + 1 + z, col, -(double)cfg[j * nsz + z]);
		}
		int lr = xp_lp_max(l.rows, l.cols, l.A, l.b, l.c, x, &obj);
		if (lr != 0)
			rc = xp_errf(err, XP_EINTERNAL, "bound: the LP (%zu x %zu) failed (%d)",
				     l.rows, l.cols, lr);
		else /* lp.c's tolerances are relative: round the optimum up a little */
			*milli = obj * (1 + 1e-9) + 1e-6;
		free(l.A);
		free(l.b);
		free(l.c);
		free(x);
	}
	if (info)
		*info = bi;
	free(g.out);
	free(s);
	free(t);
	return rc;
}
