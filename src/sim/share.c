/*
 * share: the GenAI serving trace packed whole, as enforced fractions and
 * with memory overcommit (share.h). The trace is read into one dense
 * (pod x minute) grid per series; a missing sample is 0 (the pod's GPU
 * idle or empty that minute), two samples in one minute keep the larger.
 */
#include "share.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/csv.h"
#include "../lib/parse.h"
#include "../lib/vec.h"
#include "../lib/xalloc.h"

#define MAXPODS 4096
#define GIB	(1024.0 * 1024.0 * 1024.0)

struct sample {
	uint32_t pod;
	double t, v;
};

struct trace {
	char (*ip)[64];
	uint32_t npods;
	uint32_t slot[2 * MAXPODS]; /* open addressing: pod + 1, 0 free */
	XP_VEC(struct sample) s[2]; /* 0 duty (%), 1 memory (bytes) */
};

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

/* the pod of ip, added when new; -1 when there are too many */
static int64_t pod_of(struct trace *tr, const char *ip)
{
	uint32_t i = hash(ip) & (2 * MAXPODS - 1);
	for (; tr->slot[i]; i = (i + 1) & (2 * MAXPODS - 1))
		if (!strcmp(tr->ip[tr->slot[i] - 1], ip))
			return tr->slot[i] - 1;
	if (tr->npods == MAXPODS || strlen(ip) >= 64)
		return -1;
	snprintf(tr->ip[tr->npods], 64, "%s", ip);
	tr->slot[i] = ++tr->npods;
	return tr->npods - 1;
}

static int load(struct trace *tr, const char *dir, const char *file, int series, struct xp_err *err)
{
	static const char *const cols[] = { "value", "timestamp_anon", "container_ip" };
	char path[1024];
	struct xp_csv *c;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (xp_csv_open(path, &c, err) < 0)
		return err->code;
	if (xp_csv_require(c, cols, 3, err) < 0) {
		xp_csv_close(c);
		return err->code;
	}
	int cv = xp_csv_col(c, "value"), ct = xp_csv_col(c, "timestamp_anon"),
	    ci = xp_csv_col(c, "container_ip"), rc;
	while ((rc = xp_csv_next(c, err)) > 0) {
		struct sample s;
		int64_t pod = pod_of(tr, xp_csv_field(c, (size_t)ci));
		if (pod < 0 || xp_parse_double(xp_csv_field(c, (size_t)cv), &s.v) < 0 ||
		    xp_parse_double(xp_csv_field(c, (size_t)ct), &s.t) < 0 || !(s.v >= 0)) {
			rc = xp_errf(err, XP_EINVAL, "%s:%zu: %s", path, xp_csv_line(c),
				     pod < 0 ? "more than 4096 pods" : "a value or time that is not a "
								       "non-negative number");
			break;
		}
		s.pod = (uint32_t)pod;
		xp_vec_push(&tr->s[series], s);
	}
	xp_csv_close(c);
	return rc < 0 ? rc : 0;
}

/* grid[series][pod * minutes + minute] */
struct grid {
	uint32_t pods, minutes;
	double *g[2];
	uint8_t *has[2]; /* per pod: a sample in the series */
};

static void make_grid(const struct trace *tr, struct grid *gr)
{
	double t0 = INFINITY, t1 = -INFINITY;
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < tr->s[k].n; i++) {
			t0 = fmin(t0, tr->s[k].v[i].t);
			t1 = fmax(t1, tr->s[k].v[i].t);
		}
	gr->pods = tr->npods;
	gr->minutes = t1 >= t0 ? (uint32_t)((t1 - t0) / 60) + 1 : 0;
	for (int k = 0; k < 2; k++) {
		gr->g[k] = xcalloc((size_t)gr->pods * gr->minutes + 1, sizeof(double));
		gr->has[k] = xcalloc(gr->pods + 1, 1);
		for (size_t i = 0; i < tr->s[k].n; i++) {
			const struct sample *s = &tr->s[k].v[i];
			double *cell = &gr->g[k][(size_t)s->pod * gr->minutes +
						 (uint32_t)((s->t - t0) / 60)];
			*cell = fmax(*cell, s->v);
			gr->has[k][s->pod] = 1;
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct pod {
	uint32_t id;
	double cap_gib, share, mean_duty, peak_gib;
};

static int by_pod(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;
	return x->pod < y->pod ? -1 : x->pod > y->pod;
}

/* per pod: the duty quantile and mean over its own samples (d: its n duty
 * samples), its peak memory over the grid */
static void describe(const struct grid *gr, const struct xp_share_opts *o, struct pod *p,
		     const struct sample *d, size_t n, double *scratch)
{
	const double *m = &gr->g[1][(size_t)p->id * gr->minutes];
	double sum = 0, peak = 0;
	for (size_t i = 0; i < n; i++) {
		scratch[i] = d[i].v;
		sum += d[i].v;
	}
	for (uint32_t t = 0; t < gr->minutes; t++)
		peak = fmax(peak, m[t]);
	qsort(scratch, n, sizeof(double), cmp_double);
	size_t q = (size_t)ceil(o->quantile * (double)n);
	p->share = n ? scratch[q ? q - 1 : 0] : 0;
	p->mean_duty = n ? sum / (double)n : 0;
	p->peak_gib = peak / GIB;
	p->cap_gib = p->peak_gib * o->headroom;
}

static int by_cap(const void *a, const void *b)
{
	const struct pod *x = a, *y = b;
	if (x->cap_gib != y->cap_gib)
		return x->cap_gib > y->cap_gib ? -1 : 1;
	return x->share > y->share ? -1 : x->share < y->share;
}

/* first fit decreasing: gpu[i] for pods[i]; the number of GPUs */
static uint32_t pack(const struct pod *pods, uint32_t n, int mode, const struct xp_share_opts *o,
		     uint32_t *gpu, uint32_t *too_big)
{
	double *mem = xcalloc(n + 1, sizeof(double)), *cpu = xcalloc(n + 1, sizeof(double));
	double room = o->gpu_mem_gib * (mode == XP_SHARE_OVERCOMMIT ? o->overcommit : 1);
	uint32_t ngpu = 0;
	*too_big = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t g = ngpu;
		int alone = mode == XP_SHARE_WHOLE || pods[i].cap_gib > o->gpu_mem_gib;
		*too_big += mode != XP_SHARE_WHOLE && pods[i].cap_gib > o->gpu_mem_gib;
		for (uint32_t k = 0; !alone && k < ngpu; k++)
			if (cpu[k] >= 0 && mem[k] + pods[i].cap_gib <= room + 1e-9 &&
			    cpu[k] + pods[i].share <= 100 + 1e-9) {
				g = k;
				break;
			}
		if (g == ngpu)
			ngpu++;
		mem[g] += pods[i].cap_gib;
		cpu[g] = alone ? -1 : cpu[g] + pods[i].share; /* -1: taken whole */
		gpu[i] = g;
	}
	free(mem);
	free(cpu);
	return ngpu;
}

/* the minutes in which the packing's GPUs are over 100 % or over memory */
static void contention(const struct grid *gr, const struct pod *pods, uint32_t n,
		       const uint32_t *gpu, const struct xp_share_opts *o, struct xp_share_mode *m)
{
	double *duty = xcalloc(m->gpus + 1, sizeof(double)), *used = xcalloc(m->gpus + 1,
									   sizeof(double));
	for (uint32_t t = 0; t < gr->minutes; t++) {
		memset(duty, 0, (m->gpus + 1) * sizeof(double));
		memset(used, 0, (m->gpus + 1) * sizeof(double));
		for (uint32_t i = 0; i < n; i++) {
			size_t cell = (size_t)pods[i].id * gr->minutes + t;
			duty[gpu[i]] += gr->g[0][cell];
			used[gpu[i]] += gr->g[1][cell] / GIB;
		}
		uint32_t hot = 0, oom = 0;
		for (uint32_t k = 0; k < m->gpus; k++) {
			hot += duty[k] > 100;
			oom += used[k] > o->gpu_mem_gib;
		}
		m->hot_minutes += hot > 0;
		m->hot_gpu_minutes += hot;
		m->oom_minutes += oom > 0;
		m->oom_gpu_minutes += oom;
	}
	free(duty);
	free(used);
}

void xp_share_defaults(struct xp_share_opts *o)
{
	o->trace = "../shared/traces/genai2026";
	o->gpu_mem_gib = 80;
	o->headroom = 1.1;
	o->overcommit = 1.5;
	o->quantile = 0.99;
}

const char *xp_share_mode_name(int mode)
{
	static const char *const names[] = { "whole", "fractions", "overcommit" };
	return mode >= 0 && mode < XP_SHARE_NMODES ? names[mode] : "?";
}

static void summarise(const struct grid *gr, const struct xp_share_opts *o, struct pod *pods,
		      uint32_t n, struct xp_share_result *r)
{
	uint32_t *gpu = xcalloc(n + 1, sizeof(uint32_t));
	double *a = xcalloc(n + 1, sizeof(double)), *b = xcalloc(n + 1, sizeof(double));
	for (uint32_t i = 0; i < n; i++) {
		a[i] = pods[i].mean_duty;
		b[i] = pods[i].peak_gib;
	}
	qsort(a, n, sizeof(double), cmp_double);
	qsort(b, n, sizeof(double), cmp_double);
	r->duty_p50_mean = n ? (a[(n - 1) / 2] + a[n / 2]) / 2 : 0;
	r->peak_p50_gib = n ? (b[(n - 1) / 2] + b[n / 2]) / 2 : 0;
	qsort(pods, n, sizeof(*pods), by_cap);
	for (int mode = 0; mode < XP_SHARE_NMODES; mode++) {
		r->m[mode].gpus = pack(pods, n, mode, o, gpu, &r->too_big);
		contention(gr, pods, n, gpu, o, &r->m[mode]);
	}
	free(gpu);
	free(a);
	free(b);
}

int xp_share_run(const struct xp_share_opts *o, struct xp_share_result *r, struct xp_err *err)
{
	struct trace *tr = xcalloc(1, sizeof(*tr));
	struct grid gr = { 0 };
	int rc;
	memset(r, 0, sizeof(*r));
	tr->ip = xcalloc(MAXPODS, sizeof(*tr->ip));
	if ((rc = load(tr, o->trace, "pod_gpu_duty_cycle_anon.csv", 0, err)) < 0 ||
	    (rc = load(tr, o->trace, "pod_gpu_memory_used_bytes_anon.csv", 1, err)) < 0)
		goto out;
	make_grid(tr, &gr);
	struct pod *pods = xcalloc(gr.pods + 1, sizeof(*pods));
	double *scratch = xcalloc(tr->s[0].n + 1, sizeof(double));
	uint32_t n = 0;
	qsort(tr->s[0].v, tr->s[0].n, sizeof(struct sample), by_pod);
	for (size_t i = 0, j; i < tr->s[0].n; i = j) {
		uint32_t p = tr->s[0].v[i].pod;
		for (j = i; j < tr->s[0].n && tr->s[0].v[j].pod == p; j++) {
		}
		if (!gr.has[1][p])
			continue; /* both series, or it cannot be placed */
		pods[n].id = p;
		describe(&gr, o, &pods[n++], &tr->s[0].v[i], j - i, scratch);
	}
	r->pods = n;
	r->minutes = gr.minutes;
	if (n == 0)
		rc = xp_errf(err, XP_EINVAL, "%s: no pod has both a duty cycle and a memory series",
			     o->trace);
	else
		summarise(&gr, o, pods, n, r);
	free(pods);
	free(scratch);
out:
	for (int k = 0; k < 2; k++) {
		xp_vec_free(&tr->s[k]);
		free(gr.g[k]);
		free(gr.has[k]);
	}
	free(tr->ip);
	free(tr);
	return rc;
}
