/*
 * openb: reading the OpenB node and pod lists, and the target workload M
 * (PROTOCOL.md 1.1, 1.2 and 2.1). Rows are checked field by field; the
 * first bad one fails the whole load with file:line: field: reason, and
 * nothing partial is returned.
 */
#include "openb.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/csv.h"
#include "../lib/parse.h"
#include "../lib/xalloc.h"

static int field_u64(struct xp_csv *csv, int col, const char *name, int64_t max, uint64_t *out,
		     struct xp_err *err)
{
	int64_t v;
	const char *s = xp_csv_field(csv, (size_t)col);
	*out = 0; /* set on failure too: gcc -O3 cannot see xp_errf() is < 0 */
	int rc = xp_parse_i64(s, 0, max, &v);
	if (rc < 0)
		return xp_errf(err, rc, "%s:%zu: field %s: expected an integer 0..%lld, got '%s'",
			       xp_csv_name(csv), xp_csv_line(csv), name, (long long)max, s);
	*out = (uint64_t)v;
	return 0;
}

static int valid_name(const char *s)
{
	if (!*s || strlen(s) > 253)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
			return 0;
	return 1;
}

/* The nodes of an open CSV (closed here), the one reader behind the file
 * and the buffer entry points. */
static struct xp_cluster *nodes_from_csv(struct xp_csv *csv, struct xp_err *err)
{
	static const char *const cols[] = { "sn", "cpu_milli", "memory_mib", "gpu", "model" };
	const char *path = xp_csv_name(csv);
	struct xp_cluster *c = NULL;
	struct xp_strtab *names = NULL;
	int rc;

	if ((rc = xp_csv_require(csv, cols, 5, err)) < 0)
		goto fail;
	int csn = xp_csv_col(csv, "sn"), ccpu = xp_csv_col(csv, "cpu_milli"),
	    cmem = xp_csv_col(csv, "memory_mib"), cgpu = xp_csv_col(csv, "gpu"),
	    cmodel = xp_csv_col(csv, "model");
	c = xp_cluster_create();
	names = xp_strtab_create();
	while ((rc = xp_csv_next(csv, err)) > 0) {
		uint64_t cpu, mem, gpu;
		const char *sn = xp_csv_field(csv, (size_t)csn);
		const char *model = xp_csv_field(csv, (size_t)cmodel);
		if (!valid_name(sn)) {
			rc = xp_errf(err, XP_EINVAL,
				     "%s:%zu: field sn: expected a node name of letters, digits, "
				     "'-', '_', '.', got '%s'",
				     path, xp_csv_line(csv), sn);
			goto fail;
		}
		size_t before = xp_strtab_count(names);
		xp_strtab_intern(names, sn);
		if (xp_strtab_count(names) == before) {
			rc = xp_errf(err, XP_EINVAL, "%s:%zu: field sn: node '%s' listed twice",
				     path, xp_csv_line(csv), sn);
			goto fail;
		}
		if ((rc = field_u64(csv, ccpu, "cpu_milli", (int64_t)XP_MAX_CPU_MILLI, &cpu, err)) <
			    0 ||
		    (rc = field_u64(csv, cmem, "memory_mib", (int64_t)XP_MAX_MEM_MIB, &mem, err)) <
			    0 ||
		    (rc = field_u64(csv, cgpu, "gpu", XP_MAX_NODE_DEVS, &gpu, err)) < 0)
			goto fail;
		if (gpu > 0 && (!*model || strcmp(model, "nan") == 0)) {
			rc = xp_errf(err, XP_EINVAL,
				     "%s:%zu: field model: a node with %llu GPUs "
				     "needs a GPU model",
				     path, xp_csv_line(csv), (unsigned long long)gpu);
			goto fail;
		}
		struct xp_node *n = xp_cluster_add_node(c, sn);
		n->cpu_milli = cpu;
		n->mem_mib = mem;
		xp_sym msym = gpu ? xp_strtab_intern(c->syms, model) : 0;
		for (uint64_t g = 0; g < gpu; g++) {
			struct xp_device *d = xp_node_add_device(n);
			d->cls = XP_CLASS_GPU;
			d->model = msym;
		}
	}
	if (rc < 0)
		goto fail;
	if (c->nnodes == 0) {
		rc = xp_errf(err, XP_EINVAL, "%s: no nodes", path);
		goto fail;
	}
	xp_strtab_destroy(names);
	xp_csv_close(csv);
	return c;
fail:
	xp_strtab_destroy(names);
	xp_cluster_destroy(c);
	xp_csv_close(csv);
	return NULL;
}

struct xp_cluster *xp_openb_load_nodes(const char *path, struct xp_err *err)
{
	struct xp_csv *csv;
	return xp_csv_open(path, &csv, err) < 0 ? NULL : nodes_from_csv(csv, err);
}

struct xp_cluster *xp_openb_parse_nodes(const char *name, const char *buf, size_t len,
					struct xp_err *err)
{
	struct xp_csv *csv;
	return xp_csv_open_mem(name, buf, len, &csv, err) < 0 ? NULL : nodes_from_csv(csv, err);
}

static int cmp_pod_name(const void *a, const void *b)
{
	const struct xp_openb_pod *x = a, *y = b;
	return strcmp(x->name, y->name);
}

static const char *workload_name(const char *path)
{
	const char *base = strrchr(path, '/');
	return base ? base + 1 : path;
}

void xp_openb_trace_free(struct xp_openb_trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->pods[i].name);
		free(t->pods[i].spec);
	}
	free(t->pods);
	free(t->workload);
	free(t);
}

/* gpu_spec "A|B|B" -> selector models; an unknown model simply matches no node */
static int parse_spec(struct xp_cluster *c, const char *spec, struct xp_selector *sel)
{
	const char *p = spec;
	while (*p) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == 0)
			return XP_EINVAL;
		if (xp_selector_add_model(sel, xp_strtab_intern_n(c->syms, p, len)) < 0)
			return XP_ERANGE;
		p += len;
		if (*p == '|')
			p++;
		else
			break;
	}
	return 0;
}

/* The pods of an open CSV (closed here), behind both entry points. */
static struct xp_openb_trace *pods_from_csv(struct xp_csv *csv, struct xp_cluster *c,
					    struct xp_err *err)
{
	static const char *const cols[] = { "name", "cpu_milli", "memory_mib", "num_gpu",
					    "gpu_milli" };
	const char *path = xp_csv_name(csv);
	struct xp_openb_trace *t = XNEW(struct xp_openb_trace);
	size_t cap = 0;
	int rc;

	if ((rc = xp_csv_require(csv, cols, 5, err)) < 0)
		goto fail;
	int cname = xp_csv_col(csv, "name"), ccpu = xp_csv_col(csv, "cpu_milli"),
	    cmem = xp_csv_col(csv, "memory_mib"), cnum = xp_csv_col(csv, "num_gpu"),
	    cmilli = xp_csv_col(csv, "gpu_milli"), cspec = xp_csv_col(csv, "gpu_spec");
	while ((rc = xp_csv_next(csv, err)) > 0) {
		uint64_t cpu, mem, num, milli;
		const char *name = xp_csv_field(csv, (size_t)cname);
		const char *spec = cspec >= 0 ? xp_csv_field(csv, (size_t)cspec) : "";
		size_t line = xp_csv_line(csv);

		if (!valid_name(name)) {
			rc = xp_errf(err, XP_EINVAL,
				     "%s:%zu: field name: expected a pod name, got '%s'", path,
				     line, name);
			goto fail;
		}
		if ((rc = field_u64(csv, ccpu, "cpu_milli", (int64_t)XP_MAX_CPU_MILLI, &cpu, err)) <
			    0 ||
		    (rc = field_u64(csv, cmem, "memory_mib", (int64_t)XP_MAX_MEM_MIB, &mem, err)) <
			    0 ||
		    (rc = field_u64(csv, cnum, "num_gpu", XP_MAX_NODE_DEVS, &num, err)) < 0 ||
		    (rc = field_u64(csv, cmilli, "gpu_milli", XP_MILLI, &milli, err)) < 0)
			goto fail;
		if (num > 0 && milli == 0) {
			rc = xp_errf(err, XP_EINVAL,
				     "%s:%zu: field gpu_milli: 0 with num_gpu %llu; "
				     "expected 1..1000",
				     path, line, (unsigned long long)num);
			goto fail;
		}
		if (num > 1 && milli < XP_MILLI) {
			rc = xp_errf(err, XP_EINVAL,
				     "%s:%zu: field gpu_milli: a fraction (%llu) is "
				     "allowed only with num_gpu 1, not %llu",
				     path, line, (unsigned long long)milli,
				     (unsigned long long)num);
			goto fail;
		}
		if (strcmp(spec, "nan") == 0)
			spec = "";
		if (t->n == cap) {
			cap = cap ? cap * 2 : 1024;
			t->pods = xreallocarray(t->pods, cap, sizeof(*t->pods));
		}
		struct xp_openb_pod *p = &t->pods[t->n];
		memset(p, 0, sizeof(*p));
		xp_request_init(&p->req);
		if (num > 0 && *spec && (rc = parse_spec(c, spec, &p->req.sel)) < 0) {
			xp_errf(err, rc,
				"%s:%zu: field gpu_spec: expected models separated by '|' "
				"(at most %d), got '%s'",
				path, line, XP_MAX_SEL_MODELS, spec);
			goto fail;
		}
		t->n++;
		p->name = xstrdup(name);
		p->spec = xstrdup(num > 0 ? spec : "");
		p->cpu_milli = cpu;
		p->mem_mib = mem;
		p->num_gpu = (uint16_t)num;
		p->gpu_milli = num > 0 ? (uint16_t)milli : 0;
		p->req.cpu_milli = cpu;
		p->req.mem_mib = mem;
		p->req.dev_count = p->num_gpu;
		p->req.dev_milli = p->gpu_milli;
		if (num > 0)
			p->req.sel.cls = XP_CLASS_GPU;
	}
	if (rc < 0)
		goto fail;
	if (t->n == 0) {
		rc = xp_errf(err, XP_EINVAL, "%s: no pods", path);
		goto fail;
	}
	qsort(t->pods, t->n, sizeof(*t->pods), cmp_pod_name);
	for (size_t i = 1; i < t->n; i++)
		if (strcmp(t->pods[i].name, t->pods[i - 1].name) == 0) {
			rc = xp_errf(err, XP_EINVAL, "%s: pod '%s' listed twice", path,
				     t->pods[i].name);
			goto fail;
		}
	const char *base = workload_name(path);
	size_t len = strlen(base);
	if (len > 4 && strcmp(base + len - 4, ".csv") == 0)
		len -= 4;
	if (len > 15 && strncmp(base, "openb_pod_list_", 15) == 0) {
		base += 15;
		len -= 15;
	}
	t->workload = xstrndup(base, len);
	xp_csv_close(csv);
	return t;
fail:
	xp_csv_close(csv);
	xp_openb_trace_free(t);
	return NULL;
}

struct xp_openb_trace *xp_openb_load_pods(const char *path, struct xp_cluster *c,
					  struct xp_err *err)
{
	struct xp_csv *csv;
	return xp_csv_open(path, &csv, err) < 0 ? NULL : pods_from_csv(csv, c, err);
}

struct xp_openb_trace *xp_openb_parse_pods(const char *name, const char *buf, size_t len,
					   struct xp_cluster *c, struct xp_err *err)
{
	struct xp_csv *csv;
	return xp_csv_open_mem(name, buf, len, &csv, err) < 0 ? NULL : pods_from_csv(csv, c, err);
}

/* ---- target workload M ---- */

struct shape_count {
	const struct xp_openb_pod *pod; /* exemplar */
	size_t count;
};

static int shape_cmp_key(const struct xp_openb_pod *a, const struct xp_openb_pod *b)
{
	if (a->cpu_milli != b->cpu_milli)
		return a->cpu_milli < b->cpu_milli ? -1 : 1;
	if (a->gpu_milli != b->gpu_milli)
		return a->gpu_milli < b->gpu_milli ? -1 : 1;
	if (a->num_gpu != b->num_gpu)
		return a->num_gpu < b->num_gpu ? -1 : 1;
	return strcmp(a->spec, b->spec);
}

static int cmp_pod_ptr(const void *a, const void *b)
{
	return shape_cmp_key(*(const struct xp_openb_pod *const *)a,
			     *(const struct xp_openb_pod *const *)b);
}

/* most popular first; on equal counts the larger (cpu, milli, count, spec) */
static int cmp_popular(const void *a, const void *b)
{
	const struct shape_count *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return -shape_cmp_key(x->pod, y->pod);
}

int xp_openb_workload(const struct xp_openb_trace *t, struct xp_wshape **m, size_t *n,
		      struct xp_err *err)
{
	const struct xp_openb_pod **sorted = XNEWV(const struct xp_openb_pod *, t->n);
	struct shape_count *sc = XNEWV(struct shape_count, t->n);
	size_t ns = 0, take = 0;
	double cum = 0, expect;

	if (t->n == 0) {
		free(sorted);
		free(sc);
		return xp_errf(err, XP_EINVAL, "empty trace: no target workload");
	}
	for (size_t i = 0; i < t->n; i++)
		sorted[i] = &t->pods[i];
	qsort(sorted, t->n, sizeof(*sorted), cmp_pod_ptr);
	for (size_t i = 0; i < t->n; i++) {
		if (ns && shape_cmp_key(sc[ns - 1].pod, sorted[i]) == 0) {
			sc[ns - 1].count++;
		} else {
			sc[ns].pod = sorted[i];
			sc[ns++].count = 1;
		}
	}
	qsort(sc, ns, sizeof(*sc), cmp_popular);
	expect = 95.0 * (double)t->n / 100.0;
	while (cum < expect && take < ns)
		cum += (double)sc[take++].count;
	*m = XNEWV(struct xp_wshape, take);
	for (size_t i = 0; i < take; i++) {
		(*m)[i].req = sc[i].pod->req;
		(*m)[i].req.mem_mib = 0;
		(*m)[i].p = (double)sc[i].count / cum;
	}
	*n = take;
	free(sorted);
	free(sc);
	return 0;
}
