/*
 * cmd_submit: `xpool submit` - build a job spec (docs/api.md, "POST
 * /v1/jobs") from flags, or send a YAML/JSON file as it is, and print the
 * job the controller created.
 *
 * Every flag is checked here before anything is sent, with the same rules
 * the controller applies (names, ranges, quantities, durations), so a typo
 * is exit 2 naming the flag rather than a round trip. The spec holds only
 * what was asked for, written the way the user wrote it ("500m", "32Gi",
 * 8): the controller normalises and fills in the defaults.
 *
 * Device flags: --gpus N is --devices N --device-class gpu. Any device
 * flag without a count asks for one device. A fraction (--compute-milli
 * under 1000, or --fraction) needs a count of 1, as the API says; device
 * memory alone on one device is a share sized by memory.
 *
 * --env and --label may repeat. The flag parser joins repeats with ',',
 * which would split "--env CUDA_VISIBLE_DEVICES=0,1", so --env values are
 * collected from argv one occurrence at a time; --label also accepts a
 * comma list (label values cannot hold commas).
 *
 * --dry-run prints the request body instead of sending it (no token
 * needed); the tests compare its output with the expected spec.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "../client/client.h"
#include "../lib/fileio.h"
#include "../lib/parse.h"
#include "../lib/strbuf.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"
#include "../descriptor/tree.h"
#include "cli.h"
#include "flags.h"

#define SPEC_FILE_MAX	(16u << 20)
#define MAX_DURATION_MS (366LL * 86400 * 1000)
#define IDEMPOTENCY_MAX 128

static const char *const device_classes[] = { "gpu", "npu", "fpga", "asic",
					      "dpu", "cim", "cpu",  NULL };
static const char *const topologies[] = { "any", "same_island", "same_numa", NULL };
static const char *const qos_classes[] = { "standard", "best-effort", "protected", NULL };
static const char *const colocations[] = { "node", "island", "numa", "zone", NULL };
static const char *const dep_types[] = { "after-ok", "after-any", "after-not-ok", NULL };

/* Flags that build the spec, which -f FILE excludes. */
static const char *const spec_flags[] = {
	"name",
	"tenant",
	"queue",
	"priority",
	"replicas",
	"cpu",
	"memory",
	"gpus",
	"devices",
	"device-class",
	"compute-milli",
	"fraction",
	"mig",
	"device-memory",
	"model",
	"vendor",
	"topology",
	"label",
	"env",
	"workdir",
	"duration",
	"exit-code",
	"node",
	"time-limit",
	"time",
	"qos",
	"deadline",
	"colocate",
	"gang-timeout",
	"after",
	"hold-for-nodes",
	"no-vgpu",
	NULL,
};

/* Every value of --name in argv, one per occurrence (flags end at "--"). */
static const char **occurrences(struct xp_flag *flags, int argc, char **argv, const char *name,
				size_t *n)
{
	const char **v = XNEWV(const char *, (size_t)argc + 1);
	size_t nl = strlen(name);
	*n = 0;
	for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || a[1] != '-')
			continue;
		if (strncmp(a + 2, name, nl) == 0 && a[2 + nl] == '=') {
			v[(*n)++] = a + 3 + nl;
			continue;
		}
		/* skip the value of any string flag given as "--flag value" */
		struct xp_flag *f = NULL;
		for (struct xp_flag *g = flags; g->name; g++)
			if (strcmp(g->name, a + 2) == 0)
				f = g;
		if (f && f->kind == XP_FLAG_STR && i + 1 < argc) {
			if (strcmp(f->name, name) == 0)
				v[(*n)++] = argv[i + 1];
			i++;
		}
	}
	return v;
}

/* "8" -> 8, "2.5" -> 2.5, anything else -> the string as written. */
static json_t *number_or_string(const char *s)
{
	double d;
	int64_t i;
	if (xp_parse_i64(s, INT64_MIN, INT64_MAX, &i) == 0)
		return json_integer(i);
	if (xp_parse_double(s, &d) == 0)
		return json_real(d);
	return json_string(s);
}

struct builder {
	struct xp_cli *x;
	struct xp_flag *flags;
	int bad;
};

static const char *val(struct builder *b, const char *name)
{
	struct xp_flag *f = xp_flag_get(b->flags, name);
	return f->given ? f->sval : NULL;
}

static int fail(struct builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Report a bad flag (exit 2) and remember it. */
static int fail(struct builder *b, const char *fmt, ...)
{
	char msg[XP_ERR_TEXT_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	xp_cli_errorf(b->x, 2, "%s", msg);
	b->bad = 1;
	return -1;
}

static int int_flag(struct builder *b, const char *name, long min, long max, long *out)
{
	const char *s = val(b, name);
	if (!s)
		return 0;
	if (xp_parse_int_flag(name, s, min, max, out, &b->x->err) < 0) {
		xp_cli_errorf(b->x, 2, "%s", b->x->err.text);
		b->bad = 1;
		return -1;
	}
	return 1;
}

/* --replicas N, or MIN..MAX for an elastic job (the controller checks the range) */
static int replicas_flag(struct builder *b, json_t *spec)
{
	const char *s = val(b, "replicas"), *dots = s ? strstr(s, "..") : NULL;
	long lo, hi;
	if (!dots) {
		if (int_flag(b, "replicas", 1, 1024, &lo) <= 0)
			return b->bad ? -1 : 0;
		json_object_set_new(spec, "replicas", json_integer(lo));
		return 1;
	}
	char min[24];
	snprintf(min, sizeof(min), "%.*s", (int)(dots - s < 23 ? dots - s : 23), s);
	if (xp_parse_int_flag("replicas", min, 1, 1024, &lo, &b->x->err) < 0 ||
	    xp_parse_int_flag("replicas", dots + 2, 1, 1024, &hi, &b->x->err) < 0) {
		xp_cli_errorf(b->x, 2, "%s (MIN..MAX for an elastic job)", b->x->err.text);
		b->bad = 1;
		return -1;
	}
	json_object_set_new(spec, "replicas", json_pack("{s:i,s:i}", "min", (int)lo, "max", (int)hi));
	return 1;
}

static int name_flag(struct builder *b, const char *name, json_t *spec)
{
	const char *s = val(b, name);
	char what[64];
	if (!s)
		return 0;
	snprintf(what, sizeof(what), "--%s", name);
	if (xp_cli_check_name(b->x, what, s) < 0) {
		b->bad = 1;
		return -1;
	}
	json_object_set_new(spec, name, json_string(s));
	return 1;
}

static int qty_flag(struct builder *b, const char *name, enum xp_qty kind, double min, json_t *obj,
		    const char *key)
{
	const char *s = val(b, name);
	double v;
	if (!s)
		return 0;
	if (xp_parse_qty(s, kind, &v) < 0 || v < min)
		return fail(b, "--%s: expected %s, got '%s'", name, xp_qty_hint(kind), s);
	json_object_set_new(obj, key, number_or_string(s));
	return 1;
}

static int choice_flag(struct builder *b, const char *name, const char *const *names, json_t *obj,
		       const char *key)
{
	int i;
	if (!val(b, name))
		return 0;
	if (xp_flag_choice(b->flags, name, names, &i, &b->x->err) < 0) {
		xp_cli_errorf(b->x, 2, "%s", b->x->err.text);
		b->bad = 1;
		return -1;
	}
	json_object_set_new(obj, key, json_string(names[i]));
	return 1;
}

/* "K=V" pairs (one per element) into an object; keys checked by keyok. */
static int pairs(struct builder *b, const char *name, const char **v, size_t n,
		 int (*keyok)(const char *, size_t), json_t **out)
{
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(v[i], '=');
		if (!eq || !keyok(v[i], (size_t)(eq - v[i]))) {
			json_decref(o);
			return fail(b, "--%s: expected KEY=VALUE, got '%s'", name, v[i]);
		}
		char *key = xstrndup(v[i], (size_t)(eq - v[i]));
		if (json_object_get(o, key)) {
			free(key);
			json_decref(o);
			return fail(b, "--%s: '%s' is given twice", name, v[i]);
		}
		json_object_set_new(o, key, json_string(eq + 1));
		free(key);
	}
	*out = o;
	return 1;
}

static int env_key(const char *k, size_t n)
{
	if (n == 0 || isdigit((unsigned char)k[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)k[i]) && k[i] != '_')
			return 0;
	return 1;
}

static int label_key(const char *k, size_t n)
{
	if (n == 0 || n > 253)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isgraph((unsigned char)k[i]))
			return 0;
	return 1;
}

static json_t *build_devices(struct builder *b)
{
	json_t *d = json_object();
	long count = -1, milli = -1;
	int any = 0, rc;
	const char *gpus = val(b, "gpus"), *devs = val(b, "devices"), *cls = val(b, "device-class");

	if (gpus && devs) {
		fail(b,
		     "--gpus: give --gpus or --devices, not both (--gpus %s is --devices %s "
		     "--device-class gpu)",
		     gpus, gpus);
		goto bad;
	}
	if (gpus && cls && strcasecmp(cls, "gpu") != 0) {
		fail(b, "--%s: --gpus asks for class gpu, not '%s'", "device-class", cls);
		goto bad;
	}
	if (int_flag(b, gpus ? "gpus" : "devices", 0, 64, &count) < 0)
		goto bad;
	if (int_flag(b, "compute-milli", 1, 1000, &milli) < 0)
		goto bad;
	if (val(b, "fraction")) {
		double f;
		if (milli >= 0) {
			fail(b, "--%s: give --fraction or --compute-milli, not both (got %s)",
			     "fraction", val(b, "fraction"));
			goto bad;
		}
		if (xp_parse_double(val(b, "fraction"), &f) < 0 || !(f > 0) || f > 1 ||
		    lround(f * 1000) < 1) {
			fail(b, "--%s: expected a share of one device in (0, 1], got '%s'",
			     "fraction", val(b, "fraction"));
			goto bad;
		}
		milli = lround(f * 1000);
	}
	/* device memory alone on one device is a share sized by memory: the
	 * controller gives it memory / the device's x 1000 milli where it lands */
	any = milli >= 0 || cls || val(b, "device-memory") || val(b, "model") || val(b, "vendor") ||
	      val(b, "topology") || val(b, "mig");
	if (count < 0)
		count = any ? 1 : 0;
	if (count == 0) {
		if (any) {
			fail(b, "--%s: device options need a device count of at least 1, got %s",
			     gpus ? "gpus" : "devices", gpus ? gpus : devs);
			goto bad;
		}
		json_decref(d);
		return NULL;
	}
	if (milli >= 0 && milli < 1000 && count != 1) {
		fail(b, "--%s: a fraction of a device needs a device count of 1, got %s",
		     val(b, "fraction") ? "fraction" : "compute-milli", gpus ? gpus : devs);
		goto bad;
	}
	json_object_set_new(d, "count", json_integer(count));
	if (milli >= 0)
		json_object_set_new(d, "compute_milli", json_integer(milli));
	if (val(b, "mig") && !strcasecmp(val(b, "mig"), "any")) /* sized by the flags */
		json_object_set_new(d, "mig", json_string("any"));
	else if (val(b, "mig")) /* the controller checks the name and what it excludes */
		json_object_set_new(d, "mig", json_pack("{s:s}", "profile", val(b, "mig")));
	if (qty_flag(b, "device-memory", XP_QTY_MEM_MIB, 1, d, "memory") < 0)
		goto bad;
	if (gpus || !cls) /* --devices, --fraction, --device-memory alone: a GPU */
		json_object_set_new(d, "class", json_string("gpu"));
	else if ((rc = choice_flag(b, "device-class", device_classes, d, "class")) < 0)
		goto bad;
	if (val(b, "vendor"))
		json_object_set_new(d, "vendor", json_string(val(b, "vendor")));
	if (val(b, "model")) {
		size_t n;
		char **m = xp_split_list(val(b, "model"), &n);
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++) {
			if (!*m[i]) {
				xp_free_list(m, n);
				json_decref(a);
				fail(b, "--%s: empty model name in '%s'", "model", val(b, "model"));
				goto bad;
			}
			json_array_append_new(a, json_string(m[i]));
		}
		xp_free_list(m, n);
		json_object_set_new(d, "models", a);
	}
	if (choice_flag(b, "topology", topologies, d, "topology") < 0)
		goto bad;
	return d;
bad:
	json_decref(d);
	return NULL;
}

/* --NAME DURATION (at least min_ms) as spec[key], written as given ("30s", or 90
 * seconds) */
static int duration_flag(struct builder *b, const char *name, json_t *spec, const char *key,
			 int64_t min_ms)
{
	const char *d = val(b, name);
	int64_t ms;
	if (!d)
		return 0;
	if (xp_duration_parse(d, MAX_DURATION_MS, &ms) < 0 || ms < min_ms)
		return fail(b, "--%s: expected a duration such as 30s, 5m, 1h30m or seconds, got '%s'",
			    name, d);
	json_object_set_new(spec, key, number_or_string(d));
	return 0;
}

json_t *xp_cli_time_limit(const char *d)
{
	int64_t ms;
	int slurm = xp_slurm_time_parse(d, MAX_DURATION_MS, &ms) == 0;
	if ((!slurm && xp_duration_parse(d, MAX_DURATION_MS, &ms) < 0) || ms < 1)
		return NULL;
	if (slurm) {
		char sec[32];
		snprintf(sec, sizeof(sec), "%llds", (long long)(ms / 1000));
		return json_string(sec);
	}
	return json_string(d);
}

/* --time-limit or --time (-t) as spec.time_limit (xp_cli_time_limit) */
static int time_limit_flag(struct builder *b, json_t *spec)
{
	const char *a = val(b, "time-limit"), *t = val(b, "time");
	const char *d = a ? a : t, *name = a ? "time-limit" : "time";
	if (a && t)
		return fail(b, "--time: give --time or --time-limit, not both");
	if (!d)
		return 0;
	json_t *v = xp_cli_time_limit(d);
	if (!v)
		return fail(b, "--%s: %s, got '%s'", name, XP_CLI_TIME_LIMIT_FORMS, d);
	json_object_set_new(spec, "time_limit", v);
	return 0;
}

/* --NAME WORD, one of words, as spec[key] */
static int word_flag(struct builder *b, const char *name, const char *const *words, json_t *spec,
		     const char *key)
{
	const char *s = val(b, name);
	if (!s)
		return 0;
	for (const char *const *w = words; *w; w++)
		if (!strcmp(s, *w)) {
			json_object_set_new(spec, key, json_string(s));
			return 0;
		}
	struct xp_sb l = { 0 };
	for (const char *const *w = words; *w; w++)
		xp_sb_printf(&l, "%s%s", w == words ? "" : w[1] ? ", " : " or ", *w);
	fail(b, "--%s: expected %s, got '%s'", name, l.s, s);
	xp_sb_free(&l);
	return -1;
}

/* --after ID[:TYPE],... as depends_on (TYPE after-ok by default) */
static int after_flag(struct builder *b, json_t *spec)
{
	size_t n;
	char **l = xp_split_list(val(b, "after"), &n);
	json_t *deps = json_array();
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *colon = strchr(l[i], ':');
		const char *type = colon ? colon + 1 : NULL;
		int64_t id;
		if (colon)
			*colon = 0;
		if (xp_parse_i64(l[i], 1, INT64_MAX, &id) < 0) {
			rc = fail(b, "--after: expected JOB or JOB:TYPE with a positive job id, got '%s'",
				  l[i]);
			break;
		}
		json_t *d = json_pack("{sI}", "job", (json_int_t)id);
		json_array_append_new(deps, d);
		if (!type)
			continue;
		const char *const *w = dep_types;
		while (*w && strcmp(*w, type))
			w++;
		if (!*w)
			rc = fail(b, "--after: expected a type after-ok, after-any or after-not-ok, got "
				  "'%s'", type);
		else
			json_object_set_new(d, "type", json_string(type));
	}
	xp_free_list(l, n);
	if (rc < 0) {
		json_decref(deps);
		return -1;
	}
	json_object_set_new(spec, "depends_on", deps);
	return 0;
}

/* The job spec the flags describe, or NULL (reported, exit 2). */
static json_t *build_spec(struct xp_cli *x, struct xp_flag *flags, int argc, char **argv)
{
	struct builder b = { x, flags, 0 };
	json_t *spec = json_object(), *res = json_object(), *devs, *o = NULL;
	const char **v;
	size_t n;
	long num;

	if (name_flag(&b, "name", spec) < 0 || name_flag(&b, "tenant", spec) < 0 ||
	    name_flag(&b, "queue", spec) < 0 || name_flag(&b, "node", spec) < 0)
		goto bad;
	if (int_flag(&b, "priority", -1000, 1000, &num) < 0)
		goto bad;
	if (val(&b, "priority"))
		json_object_set_new(spec, "priority", json_integer(num));
	if (x->nrest) {
		json_t *cmd = json_array();
		for (int i = 0; i < x->nrest; i++)
			json_array_append_new(cmd, json_string(x->rest[i]));
		json_object_set_new(spec, "command", cmd);
	}
	v = occurrences(flags, argc, argv, "env", &n);
	int rc = n ? pairs(&b, "env", v, n, env_key, &o) : 0;
	free(v);
	if (rc < 0)
		goto bad;
	if (rc)
		json_object_set_new(spec, "env", o);
	if (val(&b, "workdir"))
		json_object_set_new(spec, "workdir", json_string(val(&b, "workdir")));
	if (replicas_flag(&b, spec) < 0)
		goto bad;

	if (qty_flag(&b, "cpu", XP_QTY_CPU_MILLI, 1, res, "cpu") < 0 ||
	    qty_flag(&b, "memory", XP_QTY_MEM_MIB, 1, res, "memory") < 0)
		goto bad;
	devs = build_devices(&b);
	if (b.bad)
		goto bad;
	if (devs)
		json_object_set_new(res, "devices", devs);
	json_object_set_new(spec, "resources", res);
	res = NULL;

	if (val(&b, "label")) {
		/* repeats arrive joined with ',', the list separator anyway */
		char **l = xp_split_list(val(&b, "label"), &n);
		rc = pairs(&b, "label", (const char **)l, n, label_key, &o);
		xp_free_list(l, n);
		if (rc < 0)
			goto bad;
		json_object_set_new(spec, "labels", o);
	}
	if (duration_flag(&b, "duration", spec, "duration", 0) < 0 || time_limit_flag(&b, spec) < 0 ||
	    word_flag(&b, "qos", qos_classes, spec, "qos") < 0)
		goto bad;
	if (val(&b, "deadline"))
		json_object_set_new(spec, "deadline", json_string(val(&b, "deadline")));
	if (val(&b, "colocate") || val(&b, "gang-timeout")) {
		json_t *gang = json_object();
		json_object_set_new(spec, "gang", gang);
		if (word_flag(&b, "colocate", colocations, gang, "colocate") < 0 ||
		    duration_flag(&b, "gang-timeout", gang, "timeout", 1) < 0)
			goto bad;
	}
	if (val(&b, "after") && after_flag(&b, spec) < 0)
		goto bad;
	if (int_flag(&b, "exit-code", 0, 255, &num) < 0)
		goto bad;
	if (val(&b, "exit-code"))
		json_object_set_new(spec, "exit_code", json_integer(num));
	if (xp_flag_get(flags, "hold-for-nodes")->given)
		json_object_set_new(spec, "hold_for_nodes", json_true());
	if (xp_flag_get(flags, "no-vgpu")->given)
		json_object_set_new(spec, "vgpu", json_string("off"));
	return spec;
bad:
	json_decref(res);
	json_decref(spec);
	return NULL;
}

/* application/yaml or application/json, by extension, else by the first byte. */
static const char *spec_type(const char *path, const char *text)
{
	const char *dot = strrchr(path, '.');
	if (dot && (!strcmp(dot, ".yaml") || !strcmp(dot, ".yml")))
		return "application/yaml";
	if (dot && !strcmp(dot, ".json"))
		return "application/json";
	while (isspace((unsigned char)*text))
		text++;
	return *text == '{' ? "application/json" : "application/yaml";
}

/* a workflow document (a map with a jobs list) rather than one job */
static int is_workflow(const char *body, size_t len)
{
	struct xp_tree *t = NULL;
	struct xp_err err = { 0 };
	int yes = xp_tree_parse("file", body, len, -1, &t, &err) == 0 && t &&
		  t->kind == XP_TREE_MAP && xp_tree_get(t, "jobs");
	xp_tree_destroy(t);
	return yes;
}

static int print_workflow_reply(struct xp_cli *x, json_t *reply, int quiet, const char *raw)
{
	json_t *jobs = json_object_get(reply, "jobs"), *j;
	size_t i;
	if (!json_is_array(jobs))
		return xp_cli_errorf(x, 1, "the controller's reply has no jobs: %.200s", raw);
	if (x->json) {
		xp_cli_print_json(reply);
		return 0;
	}
	if (!quiet)
		printf("workflow %s submitted: %zu jobs\n", xp_cli_jstr(reply, "workflow"),
		       json_array_size(jobs));
	json_array_foreach(jobs, i, j)
	{
		long long id = 0;
		xp_cli_jint(j, "id", &id);
		if (quiet)
			printf("%lld\n", id);
		else
			printf("  job %lld %s (%s)\n", id, xp_cli_jstr(j, "name"),
			       xp_cli_jstr(j, "state"));
	}
	return 0;
}

static int read_spec_file(struct xp_cli *x, const char *path, char **text, size_t *len)
{
	if (strcmp(path, "-") == 0) {
		struct xp_sb b = { 0 };
		char buf[65536];
		size_t n;
		while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0) {
			if (b.len + n > SPEC_FILE_MAX) {
				xp_sb_free(&b);
				xp_cli_errorf(x, 1, "-f -: larger than %u MiB",
					      SPEC_FILE_MAX >> 20);
				return -1;
			}
			xp_sb_putn(&b, buf, n);
		}
		*len = b.len;
		*text = xp_sb_steal(&b);
		return 0;
	}
	if (xp_read_file(path, SPEC_FILE_MAX, text, len, &x->err) < 0) {
		xp_cli_errorf(x, 1, "-f: %s", x->err.text);
		return -1;
	}
	return 0;
}

/* What the controller understood, per replica, in one line: "32GB" is
 * visibly 29.8 GiB (units are Kubernetes': G = 10^9, Gi = 2^30) */
static void print_request(json_t *spec)
{
	json_t *res = json_object_get(spec, "resources"), *d = json_object_get(res, "devices");
	const char *cpu = json_string_value(json_object_get(res, "cpu"));
	double mib = (double)json_integer_value(json_object_get(res, "memory"));
	if (!res)
		return;
	printf("  per replica: cpu %g, memory %.1f GiB", cpu ? atof(cpu) / 1000 : 0, mib / 1024);
	if (d) {
		long long n = json_integer_value(json_object_get(d, "count"));
		long long m = json_integer_value(json_object_get(d, "compute_milli"));
		const char *cls = json_string_value(json_object_get(d, "class"));
		printf(", %lld %s", n, cls ? cls : "accelerator");
		if (m && m < 1000)
			printf(" x %.3g of one", (double)m / 1000);
		else if (!m && n == 1 && json_is_integer(json_object_get(d, "memory")))
			printf(" x a share sized by its memory");
		json_t *dm = json_object_get(d, "memory");
		if (json_is_integer(dm))
			printf(", %.1f GiB each", (double)json_integer_value(dm) / 1024);
		size_t i;
		json_t *v;
		json_array_foreach(json_object_get(d, "models"), i, v)
			printf("%s%s", i ? "|" : " (", json_string_value(v));
		if (json_array_size(json_object_get(d, "models")))
			putchar(')');
	}
	putchar('\n');
}

/* -f FILE alone (no spec flag, no command) and a printable
 * --idempotency-key of 1..IDEMPOTENCY_MAX: 0, or -1 when refused (said) */
static int check_submit_flags(struct xp_cli *x, struct xp_flag *flags)
{
	if (xp_flag_get(flags, "file")->given) {
		for (const char *const *s = spec_flags; *s; s++)
			if (xp_flag_get(flags, *s)->given) {
				xp_cli_errorf(x, 2,
					      "-f FILE cannot be combined with --%s (put it "
					      "in the file)",
					      *s);
				return -1;
			}
		if (x->nrest) {
			xp_cli_errorf(x, 2, "-f FILE cannot be combined with a command after --");
			return -1;
		}
	}
	const char *key = xp_flag_get(flags, "idempotency-key")->sval;
	if (key) {
		size_t kl = strlen(key);
		int ok = kl >= 1 && kl <= IDEMPOTENCY_MAX;
		for (size_t i = 0; ok && i < kl; i++)
			ok = isprint((unsigned char)key[i]);
		if (!ok) {
			xp_cli_errorf(x, 2,
				      "--idempotency-key: expected 1..%d printable characters, "
				      "got '%s'",
				      IDEMPOTENCY_MAX, key);
			return -1;
		}
	}
	return 0;
}

/* POST the body to /v1/workflows (wf) or /v1/jobs with the idempotency
 * key: the HTTP status, or < 0 with x->err naming the file, not the
 * "request", when the body came from one */
static int post_spec(struct xp_cli *x, const struct xp_flag *file, const char *key,
		     const char *ctype, const char *body, size_t len, int wf, char **resp,
		     size_t *rlen)
{
	struct xp_sb keyh = { 0 };
	const char *headers[3] = { "Accept: application/json", NULL, NULL };
	if (key) {
		xp_sb_printf(&keyh, "Idempotency-Key: %s", key);
		headers[1] = keyh.s;
	}
	int code = xp_client_call(x->client, "POST", wf ? "/v1/workflows" : "/v1/jobs", headers,
				  ctype, body, len, resp, rlen, &x->err);
	xp_sb_free(&keyh);
	/* the controller names the body "request": name the file instead */
	if (code < 0 && file->given && !strncmp(x->err.text, "request:", 8)) {
		char t[XP_ERR_TEXT_MAX];
		snprintf(t, sizeof(t), "%s", x->err.text + 8);
		xp_errf(&x->err, x->err.code, "%.200s:%.300s",
			strcmp(file->sval, "-") ? file->sval : "stdin", t);
	}
	return code;
}

/* a job's reply (code 201, or 200 for a repeated idempotency key): JSON,
 * its id alone (quiet), or a line and the request. The exit status */
static int print_job_reply(struct xp_cli *x, json_t *reply, const char *resp, int code,
			   int quiet)
{
	long long id;
	if (!reply || xp_cli_jint(reply, "id", &id) < 0)
		return xp_cli_errorf(x, 1, "the controller's reply has no job id: %.200s", resp);
	if (x->json)
		xp_cli_print_json(reply);
	else if (quiet)
		printf("%lld\n", id);
	else if (code == 200)
		printf("job %lld already submitted with this idempotency key (%s, %s)\n", id,
		       xp_cli_jstr(reply, "name") ? xp_cli_jstr(reply, "name") : "-",
		       xp_cli_jstr(reply, "state") ? xp_cli_jstr(reply, "state") : "-");
	else {
		printf("job %lld submitted (%s, queue %s, %s)\n", id,
		       xp_cli_jstr(reply, "name") ? xp_cli_jstr(reply, "name") : "-",
		       xp_cli_jstr(reply, "queue") ? xp_cli_jstr(reply, "queue") : "-",
		       xp_cli_jstr(reply, "state") ? xp_cli_jstr(reply, "state") : "-");
		print_request(json_object_get(reply, "spec"));
	}
	return 0;
}

int xp_verb_submit(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "file", XP_FLAG_STR, "FILE",
		  "the job spec as YAML or JSON ('-' = stdin), sent as is", 'f' },
		{ "name", XP_FLAG_STR, "NAME", "job name (default: job-ID)" },
		{ "tenant", XP_FLAG_STR, "TENANT", "submit for this tenant (admin tokens only)" },
		{ "queue", XP_FLAG_STR, "QUEUE", "queue (default: default)" },
		{ "node", XP_FLAG_STR, "NAME", "run only on this node" },
		{ "priority", XP_FLAG_STR, "N", "-1000..1000, higher runs first (default 0)" },
		{ "replicas", XP_FLAG_STR, "N",
		  "1..1024 replicas started together (a gang); MIN..MAX: elastic" },
		{ "cpu", XP_FLAG_STR, "CORES", "CPU per replica: 4, 2.5 or 500m (default 1)" },
		{ "memory", XP_FLAG_STR, "SIZE", "memory per replica: 32Gi, 512Mi (default 1Gi)" },
		{ "gpus", XP_FLAG_STR, "N", "N GPUs per replica (--devices N --device-class gpu)" },
		{ "devices", XP_FLAG_STR, "N", "N devices per replica, 0..64" },
		{ "device-class", XP_FLAG_STR, "CLASS",
		  "gpu, npu, fpga, asic, dpu, cim or cpu (default gpu)" },
		{ "compute-milli", XP_FLAG_STR, "M",
		  "share of each device, 1..1000 (1000 = whole)" },
		{ "fraction", XP_FLAG_STR, "F",
		  "share of one device, e.g. 0.5 (= --compute-milli 500)" },
		{ "mig", XP_FLAG_STR, "PROFILE",
		  "a MIG slice of one GPU, e.g. 3g.40gb (devices.mig.profile); any: the "
		  "smallest profile that fits --compute-milli/--fraction and --device-memory" },
		{ "device-memory", XP_FLAG_STR, "SIZE",
		  "memory per device, e.g. 20Gi; alone, a share of one GPU (0.1 of its compute)" },
		{ "model", XP_FLAG_STR, "MODEL",
		  "acceptable device models (repeat or comma list)" },
		{ "vendor", XP_FLAG_STR, "VENDOR", "device vendor, e.g. NVIDIA" },
		{ "topology", XP_FLAG_STR, "T", "any, same_island or same_numa (default any)" },
		{ "label", XP_FLAG_STR, "K=V", "a label (repeatable)" },
		{ "env", XP_FLAG_STR, "K=V", "an environment variable (repeatable)" },
		{ "workdir", XP_FLAG_STR, "DIR", "working directory" },
		{ "duration", XP_FLAG_STR, "D", "run time on emulated nodes: 30s, 5m, 1h30m" },
		{ "exit-code", XP_FLAG_STR, "N", "exit code emulated nodes report (default 0)" },
		{ "time-limit", XP_FLAG_STR, "D",
		  "stop the job after running this long: 2h, 30m, or Slurm's 1:00:00, 2-12, "
		  "90 (minutes)" },
		{ "time", XP_FLAG_STR, "D", "the same as --time-limit (Slurm's --time)", 't' },
		{ "qos", XP_FLAG_STR, "CLASS", "standard, best-effort or protected (default standard)" },
		{ "deadline", XP_FLAG_STR, "WHEN",
		  "finish by: a duration from now (6h) or a time (2026-12-01T08:00:00Z)" },
		{ "colocate", XP_FLAG_STR, "WHERE",
		  "a gang's replicas on one node, island, numa or zone" },
		{ "gang-timeout", XP_FLAG_STR, "D", "fail a gang still unplaced after D" },
		{ "after", XP_FLAG_STR, "JOB[:TYPE]",
		  "start after job JOB ends: after-ok (default), after-any, after-not-ok; "
		  "repeatable" },
		{ "idempotency-key", XP_FLAG_STR, "KEY",
		  "submit at most once per key (a repeat returns the first job)" },
		{ "hold-for-nodes", XP_FLAG_BOOL, NULL,
		  "accept it though no registered node could run it (for nodes yet to join)" },
		{ "no-vgpu", XP_FLAG_BOOL, NULL,
		  "vgpu: off - a GPU share announced to the task, not enforced (trusted jobs)" },
		{ "dry-run", XP_FLAG_BOOL, NULL, "print the request body instead of sending it" },
		{ "quiet", XP_FLAG_BOOL, NULL, "print only the job id", 'q' },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb verb = {
		"submit",
		"xpool submit [flags] [-- COMMAND ARGS...] | xpool submit -f FILE",
		"Submit a job: build its spec from flags (the command goes after --), or send\n"
		"a YAML or JSON spec file as it is (docs/api.md, POST /v1/jobs).\n\n"
		"  xpool submit --name train --gpus 2 --device-memory 40Gi --topology same_island "
		"\\\n"
		"      --cpu 8 --memory 32Gi -- python train.py --epochs 3\n"
		"  xpool submit --fraction 0.3 --model A100-SXM4-80GB,H100-SXM5-80GB -- ./infer\n"
		"  xpool submit -f job.yaml",
		NULL,
		0,
		0,
		1,
	};
	struct xp_cli x;
	json_t *spec = NULL, *reply = NULL;
	char *body = NULL, *resp = NULL;
	size_t len = 0, rlen = 0;
	const char *ctype = "application/json";
	int status = 2;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	struct xp_flag *file = xp_flag_get(flags, "file");
	if (check_submit_flags(&x, flags) < 0)
		goto out;
	if (file->given) {
		if (read_spec_file(&x, file->sval, &body, &len) < 0) {
			status = 1;
			goto out;
		}
		ctype = spec_type(file->sval, body);
	} else {
		spec = build_spec(&x, flags, argc, argv);
		if (!spec)
			goto out;
		body = json_dumps(spec, JSON_INDENT(2));
		len = strlen(body);
	}
	if (xp_flag_get(flags, "dry-run")->given) {
		fwrite(body, 1, len, stdout);
		if (len && body[len - 1] != '\n')
			putchar('\n');
		status = 0;
		goto out;
	}
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	int wf = file->given && is_workflow(body, len);
	int code = post_spec(&x, file, xp_flag_get(flags, "idempotency-key")->sval, ctype, body,
			     len, wf, &resp, &rlen);
	if (code < 0) {
		status = xp_cli_fail_api(&x);
		goto out;
	}
	reply = json_loadb(resp, rlen, 0, NULL);
	if (wf)
		status = print_workflow_reply(&x, reply, xp_flag_get(flags, "quiet")->given, resp);
	else
		status = print_job_reply(&x, reply, resp, code, xp_flag_get(flags, "quiet")->given);
out:
	json_decref(spec);
	json_decref(reply);
	free(body);
	free(resp);
	return xp_cli_end(&x, status);
}
