/*
 * mig_trace: the request streams of `xpool sim mig` (mig.h): OpenB's
 * one-GPU pods by their GPU fraction, GenAI's pods by their peak GPU
 * memory, and the seeded arrangement of equal or Poisson arrivals.
 */
#include "mig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/csv.h"
#include "../lib/parse.h"
#include "../lib/rng.h"
#include "../lib/vec.h"
#include "../lib/xalloc.h"

#define MIB (1024.0 * 1024.0)

static int missing(const char *path, struct xp_err *err)
{
	if (access(path, R_OK) == 0)
		return 0;
	return xp_errf(err, XP_ENOENT,
		       "%s: trace file not found (get ../shared/traces, or name the folder with "
		       "--openb-trace / --genai-trace)",
		       path);
}

/* field col of the current row as an integer in lo..hi */
static int int_field(struct xp_csv *c, const char *col, int64_t lo, int64_t hi, int64_t *out,
		     struct xp_err *err)
{
	const char *v = xp_csv_field(c, (size_t)xp_csv_col(c, col));
	if (xp_parse_i64(v, lo, hi, out) == 0)
		return 0;
	return xp_errf(err, XP_EINVAL, "%s:%zu: field %s: expected an integer %lld..%lld, got '%s'",
		       xp_csv_name(c), xp_csv_line(c), col, (long long)lo, (long long)hi, v);
}

int xp_migsim_load_openb(const char *path, struct xp_migsim_stream *s, struct xp_err *err)
{
	static const char *const cols[] = { "num_gpu", "gpu_milli", "creation_time",
					    "deletion_time" };
	XP_VEC(struct xp_migsim_req) v = { 0 };
	struct xp_csv *c;
	int rc;
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "openb");
	if ((rc = missing(path, err)) < 0 || (rc = xp_csv_open(path, &c, err)) < 0)
		return rc;
	if ((rc = xp_csv_require(c, cols, 4, err)) < 0) {
		xp_csv_close(c);
		return rc;
	}
	while ((rc = xp_csv_next(c, err)) > 0) {
		int64_t ngpu, milli, t0, t1;
		if ((rc = int_field(c, "num_gpu", 0, 64, &ngpu, err)) < 0)
			break;
		if (ngpu != 1) {
			s->skipped++;
			continue;
		}
		if ((rc = int_field(c, "gpu_milli", 1, 1000, &milli, err)) < 0 ||
		    (rc = int_field(c, "creation_time", 0, INT64_MAX / 4, &t0, err)) < 0 ||
		    (rc = int_field(c, "deletion_time", t0, INT64_MAX / 4, &t1, err)) < 0)
			break;
		struct xp_migsim_req r = { t0, t1 > t0 ? t1 - t0 : 1, (uint32_t)milli, 0, 0 };
		xp_vec_push(&v, r);
	}
	xp_csv_close(c);
	if (rc == 0 && v.n == 0)
		rc = xp_errf(err, XP_EINVAL, "%s: no one-GPU pod", path);
	if (rc < 0) {
		xp_vec_free(&v);
		return rc;
	}
	s->r = v.v;
	s->n = v.n;
	return 0;
}

struct sample {
	uint64_t pod; /* FNV-1a 64 of container_ip */
	double t, v;
};

typedef XP_VEC(struct sample) sample_vec;

static uint64_t fnv64(const char *p)
{
	uint64_t h = 1469598103934665603ull;
	for (; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	return h;
}

static int by_pod_time(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;
	if (x->pod != y->pod)
		return x->pod < y->pod ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int read_samples(const char *path, sample_vec *v, struct xp_err *err)
{
	static const char *const cols[] = { "timestamp_anon", "value", "container_ip" };
	struct xp_csv *c;
	int rc;
	if ((rc = missing(path, err)) < 0 || (rc = xp_csv_open(path, &c, err)) < 0)
		return rc;
	if ((rc = xp_csv_require(c, cols, 3, err)) < 0) {
		xp_csv_close(c);
		return rc;
	}
	int ct = xp_csv_col(c, "timestamp_anon"), cv = xp_csv_col(c, "value"),
	    ci = xp_csv_col(c, "container_ip");
	while ((rc = xp_csv_next(c, err)) > 0) {
		struct sample s = { fnv64(xp_csv_field(c, (size_t)ci)), 0, 0 };
		if (xp_parse_double(xp_csv_field(c, (size_t)ct), &s.t) < 0 || !(s.t >= 0) ||
		    xp_parse_double(xp_csv_field(c, (size_t)cv), &s.v) < 0 || !(s.v >= 0)) {
			rc = xp_errf(err, XP_EINVAL,
				     "%s:%zu: timestamp_anon or value is not a non-negative number",
				     path, xp_csv_line(c));
			break;
		}
		xp_vec_push(v, s);
	}
	xp_csv_close(c);
	return rc < 0 ? rc : 0;
}

int xp_migsim_load_genai(const char *dir, double headroom, struct xp_migsim_stream *s,
			 struct xp_err *err)
{
	sample_vec v = { 0 };
	XP_VEC(struct xp_migsim_req) out = { 0 };
	char path[1024];
	int rc;
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "genai");
	snprintf(path, sizeof(path), "%s/pod_gpu_memory_used_bytes_anon.csv", dir);
	if ((rc = read_samples(path, &v, err)) < 0) {
		xp_vec_free(&v);
		return rc;
	}
	qsort(v.v, v.n, sizeof(*v.v), by_pod_time);
	for (size_t i = 0, j; i < v.n; i = j) {
		double peak = 0;
		for (j = i; j < v.n && v.v[j].pod == v.v[i].pod; j++)
			peak = fmax(peak, v.v[j].v);
		struct xp_migsim_req r = { (int64_t)v.v[i].t,
					   (int64_t)(v.v[j - 1].t - v.v[i].t) + 60, 0,
					   (uint64_t)ceil(peak * headroom / MIB), 0 };
		xp_vec_push(&out, r);
	}
	xp_vec_free(&v);
	if (out.n == 0)
		return xp_errf(err, XP_EINVAL, "%s: no samples", path);
	s->r = out.v;
	s->n = out.n;
	return 0;
}

static int by_arrival(const void *a, const void *b)
{
	const struct xp_migsim_req *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

void xp_migsim_arrange(struct xp_migsim_stream *s, uint64_t seed, int poisson)
{
	struct xp_rng rng;
	xp_rng_seed(&rng, seed);
	for (size_t i = 0; i < s->n; i++)
		s->r[i].key = xp_rng_next(&rng);
	qsort(s->r, s->n, sizeof(*s->r), by_arrival);
	if (!poisson || s->n < 2)
		return;
	/* the same mean rate, exponential gaps, the requests in a seeded order */
	double span = (double)(s->r[s->n - 1].t - s->r[0].t), rate = (double)(s->n - 1) / span;
	int64_t t0 = s->r[0].t;
	double t = (double)t0;
	xp_rng_shuffle(&rng, s->r, s->n, sizeof(*s->r));
	for (size_t i = 0; i < s->n; i++) {
		if (i)
			t += -log(1 - xp_rng_double(&rng)) / (rate > 0 ? rate : 1);
		s->r[i].t = (int64_t)t;
	}
}

void xp_migsim_stream_free(struct xp_migsim_stream *s)
{
	free(s->r);
	s->r = NULL;
	s->n = 0;
}
