/* compare: ours vs published OpenB results (see compare.h). */
#include "compare.h"
#include "svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/csv.h"
#include "../lib/parse.h"
#include "../lib/xalloc.h"
#include "openb.h"

struct row {
	char *workload, *policy;
	double v[XP_OPENB_BUCKETS];
	uint8_t have[XP_OPENB_BUCKETS];
};

struct table {
	struct row *rows;
	size_t n;
};

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->rows[i].workload);
		free(t->rows[i].policy);
	}
	free(t->rows);
}

static const char *strip_workload(const char *w)
{
	return strncmp(w, "openb_pod_list_", 15) == 0 ? w + 15 : w;
}

static const char *const series_file[] = { "analysis_allo_discrete.csv",
					   "analysis_frag_discrete.csv",
					   "analysis_frag_ratio_discrete.csv" };

static int load(const char *where, int series, struct table *t, struct xp_err *err)
{
	char path[4096];
	struct stat st;
	struct xp_csv *csv;
	size_t cap = 0;
	int cols[XP_OPENB_BUCKETS], rc;
	static const char *const need[] = { "workload", "sc_policy", "seed" };

	if (stat(where, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(path, sizeof(path), "%s/%s", where, series_file[series]);
	else
		snprintf(path, sizeof(path), "%s", where);
	if ((rc = xp_csv_open(path, &csv, err)) < 0)
		return rc;
	if ((rc = xp_csv_require(csv, need, 3, err)) < 0)
		goto out;
	for (int x = 0; x < XP_OPENB_BUCKETS; x++) {
		char name[8];
		snprintf(name, sizeof(name), "%d", x);
		cols[x] = xp_csv_col(csv, name);
	}
	int cw = xp_csv_col(csv, "workload"), cp = xp_csv_col(csv, "sc_policy");
	while ((rc = xp_csv_next(csv, err)) > 0) {
		if (t->n == cap) {
			cap = cap ? 2 * cap : 256;
			t->rows = xreallocarray(t->rows, cap, sizeof(*t->rows));
		}
		struct row *r = &t->rows[t->n];
		memset(r, 0, sizeof(*r));
		for (int x = 0; x < XP_OPENB_BUCKETS; x++) {
			const char *s = cols[x] >= 0 ? xp_csv_field(csv, (size_t)cols[x]) : "";
			if (!*s)
				continue;
			if (xp_parse_double(s, &r->v[x]) < 0) {
				rc = xp_errf(err, XP_EINVAL,
					     "%s:%zu: column %d: expected a number, got '%s'", path,
					     xp_csv_line(csv), x, s);
				goto out;
			}
			r->have[x] = 1;
		}
		r->workload = xstrdup(strip_workload(xp_csv_field(csv, (size_t)cw)));
		r->policy = xstrdup(xp_csv_field(csv, (size_t)cp));
		t->n++;
	}
out:
	xp_csv_close(csv);
	return rc;
}

struct stat2 {
	double mean, sd;
	int n;
};

/* unallocated % at x over the rows of (workload, policy) */
static struct stat2 stats(const struct table *t, const char *w, const char *p, int x, int series)
{
	struct stat2 s = { 0, 0, 0 };
	double sum = 0, sq = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct row *r = &t->rows[i];
		if (strcmp(r->workload, w) || strcmp(r->policy, p) || !r->have[x])
			continue;
		double u = series == XP_CMP_UNALLOC ? 100 - r->v[x] : r->v[x];
		sum += u;
		sq += u * u;
		s.n++;
	}
	if (s.n) {
		s.mean = sum / s.n;
		s.sd = s.n > 1 ? sqrt(fmax(0, (sq - sum * sum / s.n) / (s.n - 1))) : 0;
	}
	return s;
}

static int seen(const struct table *t, size_t upto, const char *w, const char *p)
{
	for (size_t i = 0; i < upto; i++)
		if (!strcmp(t->rows[i].workload, w) && (!p || !strcmp(t->rows[i].policy, p)))
			return 1;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Our results alone (no published run given): mean+-sd (seeds) per
 * workload, policy and point, with no published column and no gate */
static int print_ours(const struct xp_cmp_opts *o, const struct table *ours, FILE *out)
{
	fprintf(out, "%-12s %-17s", "workload", "policy");
	for (int k = 0; k < o->npoints; k++)
		fprintf(out, " | ours at %3d%% arrived", o->points[k]);
	fputc('\n', out);
	for (size_t i = 0; i < ours->n; i++) {
		const char *w = ours->rows[i].workload;
		if (seen(ours, i, w, NULL))
			continue;
		const char **pol = XNEWV(const char *, ours->n);
		size_t np = 0;
		for (size_t j = i; j < ours->n; j++)
			if (!strcmp(ours->rows[j].workload, w) &&
			    !seen(ours, j, w, ours->rows[j].policy))
				pol[np++] = ours->rows[j].policy;
		qsort(pol, np, sizeof(*pol), cmp_str);
		for (size_t j = 0; j < np; j++) {
			fprintf(out, "%-12s %-17s", w, pol[j]);
			for (int k = 0; k < o->npoints; k++) {
				struct stat2 a = stats(ours, w, pol[j], o->points[k], o->series);
				char sa[40];
				snprintf(sa, sizeof(sa), "%.2f±%.2f (%d)", a.mean, a.sd, a.n);
				fprintf(out, " | %-22s", sa);
			}
			fputc('\n', out);
		}
		free(pol);
	}
	return 0;
}

int xp_compare(const struct xp_cmp_opts *o, FILE *out, struct xp_cmp_summary *sum,
	       struct xp_err *err)
{
	struct table ours = { 0 }, pub = { 0 };
	int rc;

	memset(sum, 0, sizeof(*sum));
	if (o->series < 0 || o->series > XP_CMP_RATIO)
		return xp_errf(err, XP_EINVAL, "unknown series %d", o->series);
	int withpub = o->published != NULL; /* NULL: ours alone, no published column */
	if ((rc = load(o->ours, o->series, &ours, err)) < 0 ||
	    (withpub && (rc = load(o->published, o->series, &pub, err)) < 0)) {
		table_free(&ours);
		table_free(&pub);
		return rc;
	}
	if (!withpub) {
		rc = print_ours(o, &ours, out);
		table_free(&ours);
		return rc;
	}
	if (o->format == XP_CMP_MARKDOWN) {
		fputs("| workload | policy |", out);
		for (int k = 0; k < o->npoints; k++)
			fprintf(out, " ours x=%d | published x=%d | diff | gate |", o->points[k],
				o->points[k]);
		fputs("\n|---|---|", out);
		for (int k = 0; k < o->npoints; k++)
			fputs("---|---|---|---|", out);
		fputc('\n', out);
	} else if (o->format == XP_CMP_CSV) {
		fputs("workload,sc_policy", out);
		for (int k = 0; k < o->npoints; k++)
			fprintf(out,
				",ours_mean_%d,ours_sd_%d,ours_n_%d,pub_mean_%d,pub_sd_%d,pub_n_%d",
				o->points[k], o->points[k], o->points[k], o->points[k],
				o->points[k], o->points[k]);
		fputc('\n', out);
	} else {
		fprintf(out, "%-12s %-17s", "workload", "policy");
		for (int k = 0; k < o->npoints; k++)
			fprintf(out, " | %-15s %-15s %6s %-4s", "ours", "published", "diff",
				"gate");
		static const char *const what[] = {
			"(unallocated GPU %, mean+-sd over seeds)",
			"(fragmentation, % of GPU capacity, mean+-sd)",
			"(fragmentation ratio, % of idle GPU, mean+-sd)"
		};
		fprintf(out, "\n%-30s", what[o->series]);
		for (int k = 0; k < o->npoints; k++)
			fprintf(out, " | at %3d%% arrived %30s", o->points[k], "");
		fputc('\n', out);
	}
	for (size_t i = 0; i < ours.n; i++) {
		const char *w = ours.rows[i].workload;
		if (seen(&ours, i, w, NULL))
			continue;
		/* the policies of this workload, sorted by label */
		const char **pol = XNEWV(const char *, ours.n);
		size_t np = 0;
		for (size_t j = i; j < ours.n; j++)
			if (!strcmp(ours.rows[j].workload, w) &&
			    !seen(&ours, j, w, ours.rows[j].policy))
				pol[np++] = ours.rows[j].policy;
		qsort(pol, np, sizeof(*pol), cmp_str);
		for (size_t j = 0; j < np; j++) {
			const char *p = pol[j];
			if (o->format == XP_CMP_MARKDOWN)
				fprintf(out, "| %s | %s |", w, p);
			else if (o->format == XP_CMP_CSV)
				fprintf(out, "%s,%s", w, p);
			else
				fprintf(out, "%-12s %-17s", w, p);
			for (int k = 0; k < o->npoints; k++) {
				int x = o->points[k];
				struct stat2 a = stats(&ours, w, p, x, o->series),
					     b = stats(&pub, w, p, x, o->series);
				char sa[40], sb[40], sd[16];
				const char *gate = "";
				snprintf(sa, sizeof(sa), "%.2f±%.2f (%d)", a.mean, a.sd, a.n);
				if (b.n) {
					double d = a.mean - b.mean;
					int ok = fabs(d) <= fmax(2 * b.sd, 0.5);
					snprintf(sb, sizeof(sb), "%.2f±%.2f (%d)", b.mean, b.sd,
						 b.n);
					snprintf(sd, sizeof(sd), "%+.2f", d);
					gate = ok ? "ok" : "MISS";
					sum->cells++;
					sum->outside += !ok;
				} else {
					snprintf(sb, sizeof(sb), "-");
					snprintf(sd, sizeof(sd), "-");
					sum->ours_only += k == 0;
				}
				if (o->format == XP_CMP_MARKDOWN)
					fprintf(out, " %s | %s | %s | %s |", sa, sb, sd, gate);
				else if (o->format == XP_CMP_CSV)
					fprintf(out, ",%.4f,%.4f,%d,%.4f,%.4f,%d", a.mean, a.sd,
						a.n, b.mean, b.sd, b.n);
				else
					fprintf(out, " | %-16s %-16s %6s %-4s", sa, sb, sd, gate);
			}
			fputc('\n', out);
		}
		free(pol);
	}
	table_free(&ours);
	table_free(&pub);
	return 0;
}

/* "+1.5%" (markdown: "+1.5 %"), or "-" when the baseline is 0 */
static void change_text(char *buf, size_t n, double v, double base, int md)
{
	if (base > 0)
		snprintf(buf, n, "%+.1f%s", 100 * (v / base - 1), md ? " %" : "%");
	else
		snprintf(buf, n, "-");
}

/* Row j opens workload w for policy p, and both p and b have results at x. */
static int both_at(const struct table *t, size_t j, const char *p, const char *b, int x,
		   int series)
{
	const char *w = t->rows[j].workload;
	return !strcmp(t->rows[j].policy, p) && !seen(t, j, w, p) && stats(t, w, p, x, series).n &&
	       stats(t, w, b, x, series).n;
}

int xp_compare_against(const struct xp_cmp_opts *o, FILE *out, int *not_better,
		       struct xp_err *err)
{
	struct table t = { 0 };
	const char *b = o->against;
	int x = o->npoints ? o->points[0] : 100, md = o->format == XP_CMP_MARKDOWN;
	int rc, have_b = 0, reported = 0;

	*not_better = 0;
	if (o->series < 0 || o->series > XP_CMP_RATIO)
		return xp_errf(err, XP_EINVAL, "unknown series %d", o->series);
	if (x < 0 || x >= XP_OPENB_BUCKETS)
		return xp_errf(err, XP_EINVAL, "arrival point %d is outside 0..%d", x,
			       XP_OPENB_BUCKETS - 1);
	if ((rc = load(o->ours, o->series, &t, err)) < 0) {
		table_free(&t);
		return rc;
	}
	for (size_t i = 0; i < t.n; i++)
		have_b |= !strcmp(t.rows[i].policy, b);
	if (!have_b)
		rc = xp_errf(err, XP_ENOENT, "%s: no results of policy '%s'", o->ours, b);
	for (size_t i = 0; rc == 0 && i < t.n; i++) {
		const char *p = t.rows[i].policy;
		double sp = 0, sb = 0;
		int nw = 0, worse = 0, any = 0;
		char ch[24];
		int first = strcmp(p, b) != 0;
		for (size_t j = 0; j < i && first; j++)
			first = strcmp(t.rows[j].policy, p) != 0;
		if (!first) /* the baseline, or a policy already reported */
			continue;
		for (size_t j = 0; j < t.n && !any; j++)
			any = both_at(&t, j, p, b, x, o->series);
		if (!any) {
			fprintf(out, "%s: no workload with results at %d%% for both it and %s\n\n", p,
				x, b);
			continue;
		}
		reported++;
		if (md)
			fprintf(out, "| workload | %s | %s | change |\n|---|---|---|---|\n", p, b);
		else
			fprintf(out, "%-12s %16s %16s %8s   (at %d%% arrived)\n", "workload", p, b,
				"change", x);
		for (size_t j = 0; j < t.n; j++) {
			const char *w = t.rows[j].workload;
			if (!both_at(&t, j, p, b, x, o->series))
				continue;
			struct stat2 a = stats(&t, w, p, x, o->series),
				     c = stats(&t, w, b, x, o->series);
			change_text(ch, sizeof(ch), a.mean, c.mean, md);
			if (md)
				fprintf(out, "| %s | %.2f ± %.2f | %.2f ± %.2f | %s |\n", w, a.mean,
					a.sd, c.mean, c.sd, ch);
			else
				fprintf(out, "%-12s %7.2f±%-5.2f (%d) %7.2f±%-5.2f (%d) %8s\n", w,
					a.mean, a.sd, a.n, c.mean, c.sd, c.n, ch);
			sp += a.mean;
			sb += c.mean;
			worse += a.mean >= c.mean;
			nw++;
		}
		change_text(ch, sizeof(ch), sp, sb, md);
		if (md)
			fprintf(out, "| **mean of %d** | **%.3f** | **%.3f** | **%s** |\n\n"
				     "%s is lower than %s on %d of %d workloads.\n\n",
				nw, sp / nw, sb / nw, ch, p, b, nw - worse, nw);
		else
			fprintf(out, "%-12s %16.3f %16.3f %8s   lower on %d of %d workloads\n\n",
				"mean", sp / nw, sb / nw, ch, nw - worse, nw);
		if (worse > *not_better)
			*not_better = worse;
	}
	if (rc == 0 && !reported)
		rc = xp_errf(err, XP_ENOENT, "%s: no policy besides '%s' to compare with it", o->ours,
			     b);
	table_free(&t);
	return rc;
}

/* the policies of workload w in t, sorted */
static size_t policies_of(const struct table *t, const char *w, const char **out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < t->n && n < max; i++) {
		if (strcmp(t->rows[i].workload, w))
			continue;
		size_t k = 0;
		while (k < n && strcmp(out[k], t->rows[i].policy))
			k++;
		if (k == n)
			out[n++] = t->rows[i].policy;
	}
	qsort(out, n, sizeof(*out), cmp_str);
	return n;
}

int xp_compare_plot(const char *ours, const char *published, const char *workload,
		    const char *svg, struct xp_err *err)
{
	enum { X0 = 60, X1 = 130, NX = X1 - X0 + 1, MAXP = 16 };
	struct table t[2] = { { 0 }, { 0 } };
	const char *pol[2][MAXP];
	size_t np[2] = { 0, 0 };
	double xs[NX], ys[2][MAXP][NX];
	char names[2][MAXP][96];
	struct xp_svg_series series[2 * MAXP];
	size_t ns = 0;
	int rc = load(ours, XP_CMP_UNALLOC, &t[0], err);
	if (rc == 0 && published)
		rc = load(published, XP_CMP_UNALLOC, &t[1], err);
	for (int x = X0; x <= X1; x++)
		xs[x - X0] = x;
	for (int side = 0; rc == 0 && side < (published ? 2 : 1); side++) {
		np[side] = policies_of(&t[side], workload, pol[side], MAXP);
		for (size_t p = 0; p < np[side]; p++) {
			size_t n = 0;
			for (int x = X0; x <= X1; x++) {
				struct stat2 st = stats(&t[side], workload, pol[side][p], x,
							XP_CMP_UNALLOC);
				ys[side][p][n++] = st.n ? st.mean : NAN;
			}
			snprintf(names[side][p], sizeof(names[side][p]), "%s%s", pol[side][p],
				 side ? " (published)" : "");
			/* a policy keeps its colour on both sides; the published
			 * runs are dashed */
			size_t colour = p;
			for (size_t q = 0; side && q < np[0]; q++)
				if (!strcmp(pol[0][q], pol[side][p]))
					colour = q;
			series[ns++] = (struct xp_svg_series){ names[side][p], xs, ys[side][p], n,
							       (unsigned)colour + 1, side };
		}
	}
	if (rc == 0 && !np[0])
		rc = xp_errf(err, XP_ENOENT, "%s: no results for workload '%s'", ours, workload);
	if (rc == 0) {
		char title[160];
		snprintf(title, sizeof(title), "OpenB %s: unallocated GPU against arrived workload",
			 workload);
		rc = xp_svg_lines(svg, title, "arrived workload (% of GPU capacity)",
				  "unallocated GPU (% of capacity)", series, ns, err);
	}
	table_free(&t[0]);
	table_free(&t[1]);
	return rc;
}
