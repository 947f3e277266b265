/*
 * gavel: the workload of Gavel's simulator (see gavel.h).
 */
#include "gavel.h"

#include <math.h>
#include <string.h>

#include "../lib/csv.h"
#include "../lib/parse.h"
#include "../lib/pyrand.h"

/* Gavel's JobTable order (scheduler/job_table.py), which choice() indexes */
static const char *const templates[XP_GAVEL_TEMPLATES] = {
	"ResNet-18 (batch size 16)",	    "ResNet-18 (batch size 32)",
	"ResNet-18 (batch size 64)",	    "ResNet-18 (batch size 128)",
	"ResNet-18 (batch size 256)",	    "ResNet-50 (batch size 16)",
	"ResNet-50 (batch size 32)",	    "ResNet-50 (batch size 64)",
	"ResNet-50 (batch size 128)",	    "Transformer (batch size 16)",
	"Transformer (batch size 32)",	    "Transformer (batch size 64)",
	"Transformer (batch size 128)",	    "Transformer (batch size 256)",
	"LM (batch size 5)",		    "LM (batch size 10)",
	"LM (batch size 20)",		    "LM (batch size 40)",
	"LM (batch size 80)",		    "Recommendation (batch size 512)",
	"Recommendation (batch size 1024)", "Recommendation (batch size 2048)",
	"Recommendation (batch size 4096)", "Recommendation (batch size 8192)",
	"A3C",				    "CycleGAN",
};

const char *xp_gavel_template_name(int t)
{
	return t >= 0 && t < XP_GAVEL_TEMPLATES ? templates[t] : "?";
}

int xp_gavel_distributed(int t)
{
	return t >= 0 && t < 19; /* ResNet-18, ResNet-50, Transformer, LM */
}

int xp_gavel_sf_index(long sf)
{
	return sf == 1 ? 0 : sf == 2 ? 1 : sf == 4 ? 2 : sf == 8 ? 3 : -1;
}

int xp_gavel_template_index(const char *name)
{
	for (int t = 0; t < XP_GAVEL_TEMPLATES; t++)
		if (!strcmp(templates[t], name))
			return t;
	return -1;
}

/* The matrix of an open CSV (closed here), behind both entry points. */
static int matrix_from_csv(struct xp_csv *c, struct xp_gavel_matrix *m, struct xp_err *err)
{
	static const char *const need[] = { "job_type", "scale_factor", "v100", "p100", "k80" };
	const char *path = xp_csv_name(c);
	int rc;
	memset(m, 0, sizeof(*m));
	if ((rc = xp_csv_require(c, need, 5, err)) < 0)
		goto out;
	int cj = xp_csv_col(c, "job_type"), cs = xp_csv_col(c, "scale_factor"),
	    ct[XP_GAVEL_TYPES] = { xp_csv_col(c, "v100"), xp_csv_col(c, "p100"),
				   xp_csv_col(c, "k80") };
	while ((rc = xp_csv_next(c, err)) > 0) {
		const char *name = xp_csv_field(c, (size_t)cj);
		int64_t sf;
		int t = xp_gavel_template_index(name);
		if (t < 0) {
			rc = xp_errf(err, XP_EINVAL, "%s:%zu: job_type: unknown template '%s'", path,
				     xp_csv_line(c), name);
			goto out;
		}
		if (xp_parse_i64(xp_csv_field(c, (size_t)cs), 1, 8, &sf) < 0 || xp_gavel_sf_index(sf) < 0) {
			rc = xp_errf(err, XP_EINVAL, "%s:%zu: scale_factor: expected 1, 2, 4 or 8",
				     path, xp_csv_line(c));
			goto out;
		}
		for (int k = 0; k < XP_GAVEL_TYPES; k++) {
			double v;
			if (xp_parse_double(xp_csv_field(c, (size_t)ct[k]), &v) < 0 || !(v >= 0)) {
				rc = xp_errf(err, XP_EINVAL,
					     "%s:%zu: column %d: expected a throughput >= 0", path,
					     xp_csv_line(c), ct[k] + 1);
				goto out;
			}
			m->tput[t][xp_gavel_sf_index(sf)][k] = v;
		}
	}
out:
	xp_csv_close(c);
	return rc;
}

int xp_gavel_load(const char *path, struct xp_gavel_matrix *m, struct xp_err *err)
{
	struct xp_csv *c;
	int rc = xp_csv_open(path, &c, err);
	return rc < 0 ? rc : matrix_from_csv(c, m, err);
}

int xp_gavel_parse(const char *name, const char *buf, size_t len, struct xp_gavel_matrix *m,
		   struct xp_err *err)
{
	struct xp_csv *c;
	int rc = xp_csv_open_mem(name, buf, len, &c, err);
	return rc < 0 ? rc : matrix_from_csv(c, m, err);
}

void xp_gavel_trace(const struct xp_gavel_matrix *m, size_t n, double rate, int multi_gpu,
		    unsigned seed, struct xp_gavel_job *out)
{
	struct xp_pyrand jobs, arrivals;
	double lam = 3600.0 / rate, t = 0;
	xp_pyrand_seed(&jobs, (uint64_t)seed + 2);
	xp_pyrand_seed(&arrivals, (uint64_t)seed + 3);
	for (size_t i = 0; i < n; i++) {
		struct xp_gavel_job *j = &out[i];
		/* the draws in Gavel's order: scale factor (also for single-GPU
		 * traces), duration branch, duration, template */
		double u = xp_pyrand_random(&jobs);
		j->sf = !multi_gpu ? 1 : u < 0.70 ? 1 : u < 0.80 ? 2 : u < 0.95 ? 4 : 8;
		double lo = xp_pyrand_random(&jobs) < 0.8 ? 1.5 : 3;
		j->duration_s = 60 * pow(10, xp_pyrand_uniform(&jobs, lo, lo == 1.5 ? 3 : 4));
		do
			j->template = (int)xp_pyrand_below(&jobs, XP_GAVEL_TEMPLATES);
		while (j->sf > 1 && !xp_gavel_distributed(j->template));
		j->total_steps = j->duration_s * m->tput[j->template][xp_gavel_sf_index(j->sf)][0];
		j->arrival_s = t;
		t += -log(1.0 - xp_pyrand_random(&arrivals)) * lam;
	}
}

void xp_gavel_write_tsv(FILE *f, const struct xp_gavel_job *j, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\t-\t-\t-\t0\t%.6f\t%d\t1\t-1.000000\t%.6f\n",
			xp_gavel_template_name(j[i].template), j[i].total_steps, j[i].sf,
			j[i].arrival_s);
}
