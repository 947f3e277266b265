/*
 * codec: journal records between their JSON (what the journal, snapshots'
 * neighbours and the etcd store hold, byte for byte as before) and struct
 * xp_rec (src/core/state/rec.h), at the store boundary: replay decodes
 * each record here and hands the state a typed one; the live path builds
 * the JSON with the xp_rec_*() writers and applies it through here too, so
 * both paths read a record with the same code.
 *
 * Every field is checked for form here, with the state's texts of before
 * ("id: missing or out of range", XP_ECORRUPT); the checks against the
 * state (the job exists, the transition is legal) stay with the state.
 * Where a record is wrong both ways, the field is named first.
 *
 * A decoded record's strings point into the parsed JSON, which the hold
 * keeps until xp_rec_release().
 */
#include "edge.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/model/mig.h"
#include "../core/state/state.h"
#include "../descriptor/descriptor.h"
#include "../lib/xalloc.h"

#define MAX_COUNT_VALUE 1000000000000LL /* per record */

/* what a decoded record borrows from: the parsed JSON, and the documents
 * and lists decoded out of it */
struct hold {
	json_t *o;
	void *doc;
	void (*doc_free)(void *doc); /* NULL: free() */
};

struct dec {
	json_t *o;
	struct xp_err *err;
	struct hold *h;
};

/* a malformed record (the text the state gave, replay names the record) */
static int bad(struct dec *d, const char *what, const char *field)
{
	return xp_errf(d->err, XP_ECORRUPT, "%s%s%s", field ? field : "", field ? ": " : "", what);
}

static int get_str(struct dec *d, const char *key, const char **out)
{
	json_t *v = json_object_get(d->o, key);
	*out = NULL;
	if (!json_is_string(v))
		return bad(d, "missing or not a string", key);
	*out = json_string_value(v);
	return 0;
}

static int get_int(struct dec *d, const char *key, int64_t min, int64_t max, int64_t *out)
{
	json_t *v = json_object_get(d->o, key);
	*out = 0;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return bad(d, "missing or out of range", key);
	*out = json_integer_value(v);
	return 0;
}

#define NODE_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

/* The scope of a token.create record: absent "node" and "bootstrap" is a
 * tenant's or admin's token, as every record before scopes was. */
static int token_scope(struct dec *d, int admin, int *scope, const char **node)
{
	json_t *jn = json_object_get(d->o, "node"), *jb = json_object_get(d->o, "bootstrap");
	*scope = admin ? XP_SCOPE_ADMIN : XP_SCOPE_TENANT;
	*node = NULL;
	if (jb && !json_is_boolean(jb))
		return bad(d, "not a boolean", "bootstrap");
	if (jn) {
		*node = json_string_value(jn);
		size_t n = *node ? strlen(*node) : 0;
		if (n < 1 || n > 253 || strspn(*node, NODE_CHARS) != n)
			return bad(d, "not a node name", "node");
		*scope = XP_SCOPE_NODE;
	}
	if (json_is_true(jb))
		*scope = jn ? -1 : XP_SCOPE_BOOTSTRAP;
	if (*scope < 0 || ((jn || json_is_true(jb)) && admin))
		return bad(d, "an admin, node or bootstrap token: one of them", "admin");
	return 0;
}

static int token_create(struct dec *d, struct xp_rec *r)
{
	int64_t id;
	json_t *admin = json_object_get(d->o, "admin");
	int rc;
	if ((rc = get_int(d, "id", 1, INT64_MAX, &id)) < 0 ||
	    (rc = get_str(d, "tenant", &r->u.token.tenant)) < 0 ||
	    (rc = get_str(d, "name", &r->u.token.name)) < 0 ||
	    (rc = get_str(d, "sha256", &r->u.token.sha256)) < 0)
		return rc;
	if (!json_is_boolean(admin))
		return bad(d, "missing or not a boolean", "admin");
	if ((rc = token_scope(d, json_is_true(admin), &r->u.token.scope, &r->u.token.node)) < 0)
		return rc;
	const char *sha = r->u.token.sha256;
	if (strlen(sha) != 64 || strspn(sha, "0123456789abcdef") != 64)
		return bad(d, "not a SHA-256 in hex", "sha256");
	r->u.token.id = (uint64_t)id;
	return 0;
}

static int node_state(struct dec *d, struct xp_rec *r)
{
	const char *sname;
	int rc;
	if ((rc = get_str(d, "name", &r->u.node.name)) < 0 || (rc = get_str(d, "state", &sname)) < 0)
		return rc;
	if ((r->u.node.state = xp_node_state_parse(sname)) < 0)
		return bad(d, "unknown node state", "state");
	return 0;
}

static int node_health(struct dec *d, struct xp_rec *r)
{
	int rc = get_str(d, "name", &r->u.health.name);
	if (rc < 0)
		return rc;
	json_t *devs = json_object_get(d->o, "devices");
	if (!json_is_array(devs)) {
		r->u.health.ndevs = -1; /* the state says how many it wants */
		return 0;
	}
	size_t n = json_array_size(devs);
	r->u.health.ndevs = n > INT32_MAX ? INT32_MAX : (int)n;
	if (n > XP_MAX_NODE_DEVS)
		return 0; /* more than any node has: the state refuses the count */
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(devs, i), *okv = json_object_get(o, "ok"),
		       *wv = json_object_get(o, "why");
		if (!json_is_boolean(okv) || (wv && !json_is_string(wv)))
			return bad(d, "expected {ok, why}", "devices");
		r->u.health.ok[i] = json_is_true(okv);
		r->u.health.why[i] = wv ? json_string_value(wv) : NULL;
	}
	return 0;
}

/* The optional exit fields of a job.finish or job.task record: signal,
 * end, detail (absent in older journals: none). */
static int get_exit(struct dec *d, struct xp_exit *x)
{
	int64_t sig = 0;
	int rc;
	json_t *v = json_object_get(d->o, "signal");
	if (v && (rc = get_int(d, "signal", 1, 127, &sig)) < 0)
		return rc;
	x->signal = (int)sig;
	if ((v = json_object_get(d->o, "end")) &&
	    (!json_is_string(v) || (x->end = xp_end_parse(json_string_value(v))) < 0))
		return bad(d, "expected oom, limits, time_limit or start", "end");
	if ((v = json_object_get(d->o, "detail")) && !json_is_string(v))
		return bad(d, "not a string", "detail");
	x->detail = v ? json_string_value(v) : NULL;
	return 0;
}

/* job.finish and job.cancel */
static int job_end(struct dec *d, struct xp_rec *r)
{
	int cancel = r->type == XP_REC_JOB_CANCEL;
	int64_t id, code = 0;
	struct xp_exit *x = &r->u.end.x;
	const char *sname = "cancelled";
	int rc = get_int(d, "id", 1, INT64_MAX, &id);
	if (rc == 0 && !cancel && (rc = get_str(d, "state", &sname)) == 0 &&
	    (x->has_code = json_object_get(d->o, "exit_code") != NULL))
		rc = get_int(d, "exit_code", -255, 255, &code);
	if (rc == 0 && !cancel)
		rc = get_exit(d, x);
	if (rc < 0)
		return rc;
	json_t *rs = json_object_get(d->o, "reason");
	r->u.end.reason = json_is_string(rs) ? json_string_value(rs) : "";
	r->u.end.state = xp_job_state_parse(sname);
	if (!cancel && r->u.end.state != XP_JOB_SUCCEEDED && r->u.end.state != XP_JOB_FAILED)
		return bad(d, "expected succeeded or failed", "state");
	r->u.end.id = (uint64_t)id;
	x->code = (int)code;
	return 0;
}

static int job_task(struct dec *d, struct xp_rec *r)
{
	int64_t id, attempt, replica, code;
	int rc;
	if ((rc = get_int(d, "id", 1, INT64_MAX, &id)) < 0 ||
	    (rc = get_int(d, "attempt", 1, INT32_MAX, &attempt)) < 0 ||
	    (rc = get_int(d, "replica", 0, XP_JOB_MAX_REPLICAS - 1, &replica)) < 0 ||
	    (rc = get_int(d, "exit_code", -255, 255, &code)) < 0 ||
	    (rc = get_exit(d, &r->u.task.x)) < 0)
		return rc;
	r->u.task.id = (uint64_t)id;
	r->u.task.attempt = (uint32_t)attempt;
	r->u.task.replica = (uint32_t)replica;
	r->u.task.x.code = (int)code;
	r->u.task.x.has_code = 1;
	return 0;
}

int xp_meter_counters_check(json_t *c, struct xp_err *err)
{
	const char *k;
	json_t *v;
	if (!json_is_object(c) || json_object_size(c) == 0)
		return xp_errf(err, XP_EINVAL,
			       "counters: expected a map of name: count such as "
			       "{\"inference_requests\": 1200}");
	if (json_object_size(c) > XP_REC_MAX_COUNTERS)
		return xp_errf(err, XP_EINVAL, "counters: at most %d names, got %zu", XP_REC_MAX_COUNTERS,
			       json_object_size(c));
	json_object_foreach(c, k, v)
	{
		size_t n = strlen(k);
		int ok = n >= 1 && n <= 63;
		for (size_t i = 0; ok && i < n; i++)
			ok = islower((unsigned char)k[i]) || isdigit((unsigned char)k[i]) ||
			     k[i] == '_';
		if (!ok)
			return xp_errf(err, XP_EINVAL,
				       "counters.%.64s: expected a name of 1-63 characters a-z, 0-9 "
				       "and _",
				       k);
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > MAX_COUNT_VALUE)
			return xp_errf(err, XP_EINVAL,
				       "counters.%s: expected an integer 1..%lld to add", k,
				       (long long)MAX_COUNT_VALUE);
	}
	return 0;
}

char *xp_rec_job_counter(uint64_t job, json_t *counters)
{
	json_t *o = json_pack("{s:I,s:O}", "id", (json_int_t)job, "counters", counters);
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

/* a document inside a record, read by the edge's parser from its compact
 * JSON (as the state read it before the codec) */
static char *doc_text(json_t *o)
{
	return json_dumps(o, JSON_COMPACT);
}

static int job_update(struct dec *d, struct xp_rec *r)
{
	json_t *v = json_object_get(d->o, "id"), *c = json_object_get(d->o, "change");
	if (!json_is_integer(v) || json_integer_value(v) < 1)
		return xp_errf(d->err, XP_ECORRUPT, "id: missing or out of range");
	if (!json_is_object(c))
		return xp_errf(d->err, XP_ECORRUPT, "change: missing or not an object");
	struct xp_jobpatch *p = xmalloc(sizeof(*p));
	d->h->doc = p;
	char *text = doc_text(c);
	int rc = xp_jobpatch_parse_text("change", text, strlen(text), 1, p, NULL, d->err);
	free(text);
	r->u.update.id = (uint64_t)json_integer_value(v);
	r->u.update.change = p;
	return rc;
}

static int job_forget(struct dec *d, struct xp_rec *r)
{
	json_t *ids = json_object_get(d->o, "ids"), *v;
	size_t i, n = json_array_size(ids);
	if (!json_is_array(ids) || n == 0 || n > XP_REC_MAX_FORGET || json_object_size(d->o) != 1)
		return xp_errf(d->err, XP_ECORRUPT, "ids: expected a list of 1..%d job ids",
			       XP_REC_MAX_FORGET);
	uint64_t *out = xmalloc(n * sizeof(*out));
	d->h->doc = out;
	json_array_foreach(ids, i, v)
	{
		if (!json_is_integer(v) || json_integer_value(v) <= 0)
			return xp_errf(d->err, XP_ECORRUPT, "ids[%zu]: expected a job id", i);
		out[i] = (uint64_t)json_integer_value(v);
	}
	r->u.forget.ids = out;
	r->u.forget.n = n;
	return 0;
}

static int job_counter(struct dec *d, struct xp_rec *r)
{
	json_t *id = json_object_get(d->o, "id"), *c = json_object_get(d->o, "counters"), *v;
	const char *k;
	if (!json_is_integer(id) || json_integer_value(id) < 1)
		return xp_errf(d->err, XP_ECORRUPT, "job.counter: id: expected a job id");
	int rc = xp_meter_counters_check(c, d->err);
	if (rc < 0)
		return rc;
	r->u.counter.id = (uint64_t)json_integer_value(id);
	json_object_foreach(c, k, v)
	{
		r->u.counter.name[r->u.counter.n] = k;
		r->u.counter.value[r->u.counter.n++] = (uint64_t)json_integer_value(v);
	}
	return 0;
}

static int job_energy(struct dec *d, struct xp_rec *r)
{
	json_t *o = d->o;
	json_int_t id = json_integer_value(json_object_get(o, "id")),
		   at = json_integer_value(json_object_get(o, "attempt")),
		   j = json_integer_value(json_object_get(o, "joules"));
	if (!json_is_integer(json_object_get(o, "id")) || id < 1 || at < 1 || j < 0 ||
	    !json_is_integer(json_object_get(o, "joules")))
		return xp_errf(d->err, XP_ECORRUPT, "job.energy: expected id, attempt and joules");
	r->u.energy.id = (uint64_t)id;
	r->u.energy.attempt = at;
	r->u.energy.joules = (uint64_t)j;
	return 0;
}

static int prices_set(struct dec *d, struct xp_rec *r)
{
	struct xp_prices *p = xmalloc(sizeof(*p));
	d->h->doc = p;
	char *text = doc_text(d->o);
	int rc = xp_prices_parse("prices.set", text, strlen(text), 1, p, d->err);
	free(text);
	r->u.prices = p;
	return rc;
}

static int queue_define(struct dec *d, struct xp_rec *r)
{
	struct xp_queuespec *q = xmalloc(sizeof(*q));
	d->h->doc = q;
	char *text = doc_text(d->o);
	if (!text)
		return xp_errf(d->err, XP_ECORRUPT, "queue: not JSON");
	int rc = xp_queuespec_parse_text("queue", text, strlen(text), 1, 1, q, NULL, d->err);
	free(text);
	r->u.queue = q;
	return rc;
}

static void cluster_free(void *c)
{
	xp_cluster_destroy(c);
}

static int node_add(struct dec *d, struct xp_rec *r)
{
	const char *src;
	int rc = get_str(d, "source", &src);
	if (rc < 0)
		return rc;
	if ((r->u.node_add.source = xp_node_source_parse(src)) < 0)
		return bad(d, "unknown source", "source");
	json_t *desc = json_object_get(d->o, "descriptor");
	if (!json_is_object(desc))
		return bad(d, "missing or not an object", "descriptor");
	char *text = doc_text(desc);
	if (!text)
		return xp_errf(d->err, XP_ECORRUPT, "node descriptor: not JSON");
	struct xp_cluster *one = xp_descriptor_load_buf("node", text, strlen(text), XP_DESC_JSON,
							d->err);
	free(text);
	if (!one)
		return d->err->code;
	d->h->doc = one;
	d->h->doc_free = cluster_free;
	r->u.node_add.desc = one;
	return 0;
}

static void spec_free(void *s)
{
	xp_jobspec_free(s);
	free(s);
}

static int job_submit(struct dec *d, struct xp_rec *r)
{
	int64_t id;
	int rc;
	if ((rc = get_int(d, "id", 1, INT64_MAX, &id)) < 0 ||
	    (rc = get_str(d, "tenant", &r->u.submit.tenant)) < 0)
		return rc;
	json_t *k = json_object_get(d->o, "key"), *spec = json_object_get(d->o, "spec");
	if (k && !json_is_null(k)) {
		if (!json_is_string(k))
			return bad(d, "not a string", "key");
		r->u.submit.key = json_string_value(k);
	}
	if (!json_is_object(spec))
		return bad(d, "missing or not an object", "spec");
	struct xp_jobspec *s = XNEW(struct xp_jobspec);
	d->h->doc = s;
	d->h->doc_free = spec_free;
	char *text = doc_text(spec);
	rc = xp_jobspec_parse_text("spec", text, strlen(text), 1, s, NULL, d->err);
	free(text);
	r->u.submit.id = (uint64_t)id;
	r->u.submit.spec = s;
	return rc;
}

static void svcspec_free(void *s)
{
	xp_servicespec_free(s);
	free(s);
}

/* a service's definition inside a create or an update (as the state read
 * it before the codec: "service" names the parse) */
static int service_spec(struct dec *d, struct xp_rec *r)
{
	json_t *def = json_object_get(d->o, "spec");
	char *text = json_is_object(def) ? doc_text(def) : NULL;
	if (!text)
		return xp_errf(d->err, XP_ECORRUPT, "spec: missing or not an object");
	struct xp_servicespec *s = XNEW(struct xp_servicespec);
	d->h->doc = s;
	d->h->doc_free = svcspec_free;
	r->u.service.spec = s;
	int rc = xp_servicespec_parse_text("service", text, strlen(text), 1, s, NULL, d->err);
	free(text);
	return rc;
}

static int service(struct dec *d, struct xp_rec *r)
{
	json_t *v;
	if (r->type == XP_REC_SERVICE_CREATE) {
		int rc = service_spec(d, r);
		if (rc == 0 && !r->u.service.spec->tenant[0])
			rc = xp_errf(d->err, XP_ECORRUPT, "spec.tenant: missing");
		return rc;
	}
	if (r->type == XP_REC_SERVICE_UPDATE) { /* named by its spec */
		json_t *c = json_object_get(d->o, "canary"), *w = json_object_get(d->o, "weight");
		r->u.service.name = json_string_value(json_object_get(json_object_get(d->o, "spec"),
								      "name"));
		if (!r->u.service.name)
			return xp_errf(d->err, XP_ECORRUPT, "name: missing or not a string");
		if (!json_is_integer(c) || !json_is_integer(w) || json_integer_value(c) < 0 ||
		    json_integer_value(c) > XP_SERVICE_MAX_REPLICAS || json_integer_value(w) < 0 ||
		    json_integer_value(w) > 100)
			return xp_errf(d->err, XP_ECORRUPT,
				       "canary, weight: missing or out of range");
		r->u.service.canary = (uint32_t)json_integer_value(c);
		r->u.service.weight = (uint32_t)json_integer_value(w);
		return service_spec(d, r);
	}
	if (!(r->u.service.name = json_string_value(json_object_get(d->o, "name"))))
		return xp_errf(d->err, XP_ECORRUPT, "name: missing or not a string");
	if (r->type == XP_REC_SERVICE_SCALE) { /* its range is the service's */
		v = json_object_get(d->o, "replicas");
		r->u.service.replicas = json_is_integer(v) ? json_integer_value(v) : INT64_MIN;
		r->u.service.reason = json_string_value(json_object_get(d->o, "reason"));
	}
	return 0;
}

/* one allocation's form (its node is the state's to find) */
static int alloc_decode(json_t *o, uint32_t r, struct xp_rec_alloc *x, struct xp_err *err)
{
	json_t *devs;
	json_int_t cpu, mem, milli, dmem;
	memset(x, 0, sizeof(*x));
	if (json_unpack(o, "{s:s,s:I,s:I,s:I,s:I,s:o}", "node", &x->node, "cpu_milli", &cpu,
			"memory_mib", &mem, "dev_milli", &milli, "dev_mem_mib", &dmem, "devices",
			&devs) < 0 ||
	    !json_is_array(devs) || json_array_size(devs) > XP_MAX_NODE_DEVS || cpu < 0 ||
	    mem < 0 || milli < 0 || milli > XP_MILLI || dmem < 0)
		return xp_errf(err, XP_ECORRUPT, "allocation %u: malformed", r);
	json_t *ix = json_object_get(o, "node_index");
	x->has_index = json_is_integer(ix);
	x->node_index = x->has_index ? json_integer_value(ix) : -1;
	x->cpu_milli = (uint64_t)cpu;
	x->mem_mib = (uint64_t)mem;
	x->dev_milli = (uint16_t)milli;
	x->dev_mem_mib = (uint64_t)dmem;
	x->ndev = (uint16_t)json_array_size(devs);
	for (uint16_t i = 0; i < x->ndev; i++) {
		json_t *v = json_array_get(devs, i);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= XP_MAX_NODE_DEVS)
			return xp_errf(err, XP_ECORRUPT, "allocation %u: device index", r);
		x->devs[i] = (uint8_t)json_integer_value(v);
	}
	json_t *mig = json_object_get(o, "mig");
	json_int_t id = -1, start = -1;
	if (mig && (json_unpack(mig, "{s:I,s:I}", "id", &id, "start", &start) < 0 ||
		    xp_mig_kind_of_id((unsigned)id) < 0 || id < 0 || start < 0 ||
		    start >= XP_MIG_MEM_SLICES || x->ndev != 1))
		return xp_errf(err, XP_ECORRUPT, "allocation %u: mig", r);
	if (mig) {
		x->mig = (uint8_t)(xp_mig_kind_of_id((unsigned)id) + 1);
		x->mig_start = (uint8_t)start;
	}
	return 0;
}

/* a list of allocations (at most XP_JOB_MAX_REPLICAS) into *out */
static int allocs_decode(json_t *arr, struct xp_rec_alloc **out, struct xp_err *err)
{
	size_t n = json_array_size(arr);
	*out = xcalloc(n ? n : 1, sizeof(**out));
	for (size_t r = 0; r < n; r++) {
		int rc = alloc_decode(json_array_get(arr, r), (uint32_t)r, &(*out)[r], err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int xp_rec_allocs_read(const char *buf, size_t len, struct xp_rec_alloc **out, size_t *n,
		       struct xp_err *err)
{
	json_error_t je;
	json_t *arr = json_loadb(buf, len, 0, &je);
	*out = NULL;
	*n = 0;
	if (!json_is_array(arr) || json_array_size(arr) > XP_JOB_MAX_REPLICAS) {
		json_decref(arr);
		return xp_errf(err, XP_ECORRUPT, "allocations: expected at most %d",
			       XP_JOB_MAX_REPLICAS);
	}
	struct xp_rec_alloc *a;
	int rc = allocs_decode(arr, &a, err);
	size_t k = json_array_size(arr), names = 0;
	for (size_t i = 0; rc == 0 && i < k; i++)
		names += strlen(a[i].node) + 1;
	if (rc == 0) { /* one block: the allocations, then their node names */
		*out = xmalloc(k * sizeof(*a) + names + 1);
		char *p = (char *)(*out + k);
		for (size_t i = 0; i < k; i++) {
			(*out)[i] = a[i];
			size_t l = strlen(a[i].node) + 1;
			memcpy(p, a[i].node, l);
			(*out)[i].node = p;
			p += l;
		}
		*n = k;
	}
	free(a);
	json_decref(arr);
	return rc;
}

/* job.start: the allocations' count is the job's (the state checks it) */
static int job_start(struct dec *d, struct xp_rec *r)
{
	int64_t id;
	int rc = get_int(d, "id", 1, INT64_MAX, &id);
	if (rc < 0)
		return rc;
	r->u.start.id = (uint64_t)id;
	json_t *arr = json_object_get(d->o, "allocations");
	if (!json_is_array(arr)) {
		r->u.start.n = -1;
		return 0;
	}
	r->u.start.n = (int64_t)json_array_size(arr);
	if (json_array_size(arr) > XP_JOB_MAX_REPLICAS)
		return 0; /* more than any job has: the state refuses the count */
	struct xp_rec_alloc *a;
	rc = allocs_decode(arr, &a, d->err);
	d->h->doc = a;
	r->u.start.a = a;
	return rc;
}

static int job_resize(struct dec *d, struct xp_rec *r)
{
	json_int_t id, epoch, size;
	json_t *keep, *add;
	if (json_unpack(d->o, "{s:I,s:I,s:I,s:o,s:o,s:s}", "id", &id, "epoch", &epoch, "size",
			&size, "keep", &keep, "add", &add, "reason", &r->u.resize.reason) < 0 ||
	    id < 1 || epoch < 1 || epoch > UINT32_MAX || size < 1 || size > XP_JOB_MAX_REPLICAS ||
	    !json_is_array(add) || json_array_size(add) > XP_JOB_MAX_REPLICAS)
		return xp_errf(d->err, XP_ECORRUPT,
			       "expected {id, epoch 1.., size 1..%d, keep, add, reason}",
			       XP_JOB_MAX_REPLICAS);
	r->u.resize.id = (uint64_t)id;
	r->u.resize.epoch = (uint32_t)epoch;
	r->u.resize.size = (uint32_t)size;
	r->u.resize.nadd = (uint32_t)json_array_size(add);
	/* keep[]'s ranks are checked against the job's size by the state */
	size_t nk = json_is_array(keep) ? json_array_size(keep) : 0;
	r->u.resize.nkeep = json_is_array(keep) ? (int64_t)nk : -1;
	if (nk > XP_JOB_MAX_REPLICAS)
		nk = 0; /* more than any job has: the state refuses the count */
	/* one block: the ranks, then the allocations */
	size_t kb = (nk * sizeof(int64_t) + 15) / 16 * 16;
	char *block = xcalloc(1, kb + (r->u.resize.nadd + 1) * sizeof(struct xp_rec_alloc));
	d->h->doc = block;
	int64_t *k = (int64_t *)(void *)block;
	for (size_t i = 0; i < nk; i++) {
		json_t *v = json_array_get(keep, i);
		k[i] = json_is_integer(v) ? json_integer_value(v) : INT64_MIN;
	}
	r->u.resize.keep = k;
	struct xp_rec_alloc *a = (struct xp_rec_alloc *)(void *)(block + kb);
	for (uint32_t i = 0; i < r->u.resize.nadd; i++) {
		int rc = alloc_decode(json_array_get(add, i), i, &a[i], d->err);
		if (rc < 0)
			return rc;
	}
	r->u.resize.add = a;
	return 0;
}

/* node.mig_mode_change {name, allow}; node.mig_mode {name, device, mode, job};
 * node.mig_mode_done {name, device, mode, ok, why}, mode "mig" (on) or "off": read as
 * given, checked by the state (core/state/migmode.c) in its order and with its texts */
static int mig_mode(struct dec *d, struct xp_rec *r)
{
	json_t *v;
	memset(&r->u.migmode, 0, sizeof(r->u.migmode));
	v = json_object_get(d->o, "name");
	r->u.migmode.name = json_is_string(v) ? json_string_value(v) : NULL;
	v = json_object_get(d->o, "allow");
	r->u.migmode.allow = json_is_boolean(v) ? json_is_true(v) : -1;
	v = json_object_get(d->o, "device");
	r->u.migmode.device = json_is_integer(v) && json_integer_value(v) >= 0
				      ? (int64_t)json_integer_value(v)
				      : -1;
	v = json_object_get(d->o, "mode");
	r->u.migmode.mode_mig = json_is_string(v) && !strcmp(json_string_value(v), "mig");
	r->u.migmode.mode_off = json_is_string(v) && !strcmp(json_string_value(v), "off");
	v = json_object_get(d->o, "job");
	r->u.migmode.job = json_is_integer(v) && json_integer_value(v) > 0
				   ? (uint64_t)json_integer_value(v)
				   : 0;
	v = json_object_get(d->o, "ok");
	r->u.migmode.ok = json_is_boolean(v) ? json_is_true(v) : -1;
	v = json_object_get(d->o, "why");
	r->u.migmode.why = !v ? "" : json_is_string(v) ? json_string_value(v) : NULL;
	return 0;
}

static int decode(struct dec *d, struct xp_rec *r)
{
	int64_t id;
	int rc;
	json_t *v;
	switch (r->type) {
	case XP_REC_TENANT_CREATE:
		return get_str(d, "name", &r->u.tenant.name);
	case XP_REC_TOKEN_CREATE:
		return token_create(d, r);
	case XP_REC_TOKEN_REVOKE:
		rc = get_int(d, "id", 1, INT64_MAX, &id);
		r->u.revoke.id = (uint64_t)id;
		return rc;
	case XP_REC_QUEUE_DELETE:
	case XP_REC_NODE_REMOVE:
		return get_str(d, "name", &r->u.node.name);
	case XP_REC_NODE_STATE:
		return node_state(d, r);
	case XP_REC_NODE_HEALTH:
		return node_health(d, r);
	case XP_REC_JOB_FINISH:
	case XP_REC_JOB_CANCEL:
		return job_end(d, r);
	case XP_REC_JOB_TASK:
		return job_task(d, r);
	case XP_REC_JOB_REQUEUE:
	case XP_REC_JOB_PREEMPT:
		rc = get_int(d, "id", 1, INT64_MAX, &id);
		r->u.requeue.id = (uint64_t)id;
		v = json_object_get(d->o, "reason");
		r->u.requeue.reason = json_is_string(v) ? json_string_value(v) : NULL;
		return rc;
	case XP_REC_JOB_HOLD:
		v = json_object_get(d->o, "id");
		if (!json_is_integer(v) || json_integer_value(v) < 1)
			return xp_errf(d->err, XP_ECORRUPT, "id: missing or out of range");
		r->u.hold.id = (uint64_t)json_integer_value(v);
		v = json_object_get(d->o, "held");
		r->u.hold.held = json_is_string(v) ? xp_hold_parse(json_string_value(v)) : -1;
		if (r->u.hold.held < 0)
			return xp_errf(d->err, XP_ECORRUPT, "held: expected none, user or admin");
		return 0;
	case XP_REC_JOB_UPDATE:
		return job_update(d, r);
	case XP_REC_JOB_FORGET:
		return job_forget(d, r);
	case XP_REC_JOB_COUNTER:
		return job_counter(d, r);
	case XP_REC_JOB_ENERGY:
		return job_energy(d, r);
	case XP_REC_PRICES_SET:
		return prices_set(d, r);
	case XP_REC_QUEUE_CREATE:
	case XP_REC_QUEUE_UPDATE:
		return queue_define(d, r);
	case XP_REC_NODE_ADD:
		return node_add(d, r);
	case XP_REC_JOB_SUBMIT:
		return job_submit(d, r);
	case XP_REC_SERVICE_CREATE:
	case XP_REC_SERVICE_UPDATE:
	case XP_REC_SERVICE_SCALE:
	case XP_REC_SERVICE_DELETE:
	case XP_REC_SERVICE_PROMOTE:
	case XP_REC_SERVICE_ROLLBACK:
	case XP_REC_SERVICE_ROLLED:
		return service(d, r);
	case XP_REC_JOB_START:
		return job_start(d, r);
	case XP_REC_JOB_RESIZE:
		return job_resize(d, r);
	case XP_REC_NODE_MIG_LEAVE:
	case XP_REC_NODE_MIG_MODE:
	case XP_REC_NODE_MIG_DONE:
		return mig_mode(d, r);
	}
	return xp_errf(d->err, XP_EINTERNAL, "record type %d has no decoder", r->type);
}

int xp_rec_decode(const char *type, const char *body, size_t len, struct xp_rec *out,
		  void **hold, struct xp_err *err)
{
	json_error_t je;
	struct dec d = { .err = err };
	*hold = NULL;
	memset(out, 0, sizeof(*out));
	out->type = xp_rec_type_parse(type);
	d.o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(d.o)) {
		json_decref(d.o);
		return xp_errf(err, XP_ECORRUPT, "not a JSON object: %s", je.text);
	}
	if (out->type < 0) {
		json_decref(d.o);
		return xp_errf(err, XP_ECORRUPT, "unknown record type '%s'", type);
	}
	d.h = XNEW(struct hold);
	d.h->o = d.o;
	int rc = decode(&d, out);
	if (rc < 0) {
		xp_rec_release(d.h);
		return rc;
	}
	*hold = d.h;
	return 1;
}

void xp_rec_release(void *hold)
{
	struct hold *h = hold;
	if (!h)
		return;
	json_decref(h->o);
	if (h->doc_free)
		h->doc_free(h->doc);
	else
		free(h->doc);
	free(h);
}

int xp_rec_apply(struct xp_state *st, uint64_t seq, int64_t at, const char *type,
		 const char *body, size_t len, struct xp_event_info *ev, struct xp_err *err)
{
	struct xp_rec r;
	void *hold;
	int rc = xp_rec_decode(type, body, len, &r, &hold, err);
	if (rc < 0) {
		if (ev) { /* as the state leaves it on a refusal */
			memset(ev, 0, sizeof(*ev));
			ev->node = -1;
			ev->state = -1;
		}
		return rc;
	}
	rc = xp_state_apply_rec(st, seq, at, &r, ev, err);
	xp_rec_release(hold);
	return rc;
}
