/*
 * load: the serving simulator's load series (load.h): the GenAI trace's
 * request rows summed per window, or any time,qps CSV resampled; and
 * xpool's forecast of it.
 */
#include "load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/csv.h"
#include "../lib/parse.h"
#include "../lib/vec.h"
#include "../lib/xalloc.h"

struct row {
	double t, v;
};
typedef XP_VEC(struct row) rowvec;

static int num(struct xp_csv *c, int col, double *out, struct xp_err *err)
{
	const char *v = xp_csv_field(c, (size_t)col);
	if (xp_parse_double(v, out) == 0 && isfinite(*out))
		return 0;
	return xp_errf(err, XP_EINVAL, "%s:%zu: field %s: expected a number, got '%s'",
		       xp_csv_name(c), xp_csv_line(c), xp_csv_colname(c, (size_t)col), v);
}

/* the rows wanted, as (time, value); genai picks the request type */
static int read_rows(struct xp_csv *c, int genai, int series, rowvec *rows, double *first,
		     struct xp_err *err)
{
	int tcol, vcol, kcol = -1, rc;
	if (genai) {
		tcol = xp_csv_col(c, "timestamp_anon");
		vcol = xp_csv_col(c, "value");
		kcol = xp_csv_col(c, "request_type");
	} else {
		tcol = xp_csv_col(c, "time");
		vcol = xp_csv_col(c, "qps");
		if (tcol < 0 || vcol < 0) {
			if (xp_csv_ncols(c) < 2)
				return xp_errf(err, XP_EINVAL, "%s: expected columns time,qps",
					       xp_csv_name(c));
			tcol = 0;
			vcol = 1;
		}
	}
	while ((rc = xp_csv_next(c, err)) > 0) {
		struct row r;
		const char *k = kcol >= 0 ? xp_csv_field(c, (size_t)kcol) : NULL;
		int gen = k && !strcmp(k, "Generative Requests"),
		    api = k && !strcmp(k, "API Requests");
		if (k && !gen && !api)
			return xp_errf(err, XP_EINVAL, "%s:%zu: field request_type: unknown '%s'",
				       xp_csv_name(c), xp_csv_line(c), k);
		if ((rc = num(c, tcol, &r.t, err)) < 0)
			return rc;
		if (r.t < *first) /* windows start at the file's first row, of any type */
			*first = r.t;
		if (k &&
		    ((series == XP_LOAD_GENERATIVE && !gen) || (series == XP_LOAD_API && !api)))
			continue;
		if ((rc = num(c, vcol, &r.v, err)) < 0)
			return rc;
		if (r.v < 0)
			return xp_errf(err, XP_EINVAL,
				       "%s:%zu: field %s: expected a rate >= 0, got %g",
				       xp_csv_name(c), xp_csv_line(c),
				       xp_csv_colname(c, (size_t)vcol), r.v);
		xp_vec_push(rows, r);
	}
	return rc;
}

static int by_time(const void *a, const void *b)
{
	double x = ((const struct row *)a)->t, y = ((const struct row *)b)->t;
	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* the most common gap between consecutive distinct times (0 when none) */
static double sample_period(const rowvec *rows)
{
	double best = 0;
	size_t best_n = 0, run = 0;
	double *gaps = XNEWV(double, rows->n + 1);
	size_t ng = 0;
	for (size_t i = 1; i < rows->n; i++)
		if (rows->v[i].t > rows->v[i - 1].t)
			gaps[ng++] = rows->v[i].t - rows->v[i - 1].t;
	qsort(gaps, ng, sizeof(double), cmp_double);
	for (size_t i = 0; i < ng; i++) {
		run = i && gaps[i] == gaps[i - 1] ? run + 1 : 1;
		if (run > best_n) {
			best_n = run;
			best = gaps[i];
		}
	}
	free(gaps);
	return best;
}

/* rows (sorted) into l->qps per window of w seconds */
static int resample(const rowvec *rows, double t0, double w, struct xp_load *l, struct xp_err *err)
{
	double span = rows->v[rows->n - 1].t - t0;
	double nw = floor(span / w) + 1;
	if (nw > XP_LOAD_MAX_WINDOWS)
		return xp_errf(err, XP_ETOOBIG,
			       "%s: %.0f windows of %g s (at most %u): use a larger "
			       "--window",
			       l->name, nw, w, XP_LOAD_MAX_WINDOWS);
	l->n = (size_t)nw;
	l->qps = XNEWV(double, l->n);
	uint32_t *cnt = XNEWV(uint32_t, l->n);
	for (size_t i = 0; i < rows->n; i++) {
		size_t k = (size_t)floor((rows->v[i].t - t0) / w);
		if (k >= l->n)
			k = l->n - 1;
		l->qps[k] += rows->v[i].v;
		cnt[k]++;
	}
	for (size_t k = 0; k < l->n; k++) {
		if (l->genai)
			l->qps[k] *= l->sample_s / w;
		else if (cnt[k])
			l->qps[k] /= cnt[k];
		else if (k)
			l->qps[k] = l->qps[k - 1];
	}
	free(cnt);
	l->step_s = w;
	return 0;
}

int xp_load_read(const char *path, double window_s, int series, struct xp_load *l,
		 struct xp_err *err)
{
	struct xp_csv *c;
	rowvec rows = { 0 };
	int rc;
	memset(l, 0, sizeof(*l));
	const char *base = strrchr(path, '/');
	snprintf(l->name, sizeof(l->name), "%s", base ? base + 1 : path);
	if (access(path, R_OK) != 0)
		return xp_errf(err, XP_ENOENT, "%s: load series not found", path);
	if ((rc = xp_csv_open(path, &c, err)) < 0)
		return rc;
	l->genai = xp_csv_col(c, "timestamp_anon") >= 0 && xp_csv_col(c, "value") >= 0 &&
		   xp_csv_col(c, "request_type") >= 0;
	double first = INFINITY;
	rc = read_rows(c, l->genai, series, &rows, &first, err);
	xp_csv_close(c);
	if (rc == 0 && rows.n == 0)
		rc = xp_errf(err, XP_EINVAL, "%s: no rows of load", path);
	if (rc == 0) {
		qsort(rows.v, rows.n, sizeof(struct row), by_time);
		l->rows = rows.n;
		if (l->genai)
			l->sample_s = sample_period(&rows);
		if (l->genai && !(l->sample_s > 0))
			l->sample_s = 60;
		if (!(window_s > 0))
			window_s = l->genai ? l->sample_s : 60;
		rc = resample(&rows, l->genai ? first : rows.v[0].t, window_s, l, err);
	}
	xp_vec_free(&rows);
	if (rc < 0)
		xp_load_free(l);
	return rc;
}

void xp_load_free(struct xp_load *l)
{
	if (!l)
		return;
	free(l->qps);
	l->qps = NULL;
	l->n = 0;
}

void xp_load_scale(struct xp_load *l, double time_scale, double qps_scale)
{
	l->step_s *= time_scale;
	for (size_t k = 0; k < l->n; k++)
		l->qps[k] *= qps_scale;
}

double xp_load_at(const struct xp_load *l, double t)
{
	if (t < 0 || !l->n)
		return 0;
	size_t k = (size_t)floor(t / l->step_s);
	return k < l->n ? l->qps[k] : 0;
}

double xp_load_peak(const struct xp_load *l)
{
	double p = 0;
	for (size_t k = 0; k < l->n; k++)
		if (l->qps[k] > p)
			p = l->qps[k];
	return p;
}

double xp_load_mean(const struct xp_load *l)
{
	double s = 0;
	for (size_t k = 0; k < l->n; k++)
		s += l->qps[k];
	return l->n ? s / (double)l->n : 0;
}

double xp_load_duration(const struct xp_load *l)
{
	return (double)l->n * l->step_s;
}

