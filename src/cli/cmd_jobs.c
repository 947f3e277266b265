/*
 * cmd_jobs: the verbs about jobs - `xpool jobs` (list), `xpool job ID`
 * (one job, described), `xpool cancel ID...`, `xpool explain ID` (why a
 * pending job waits) and `xpool logs ID`.
 *
 * `jobs` prints the newest page (--limit, default the controller's 100),
 * oldest first so it ends at the newest job, as squeue users expect;
 * --all pages through everything from the oldest. When older jobs exist
 * it says so on stderr, so stdout stays a clean table. `cancel` takes several ids,
 * checks them all before sending anything, cancels each in turn and fails
 * (exit 1) when any one failed; with -o json it prints each reply.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../client/client.h"
#include "../lib/parse.h"
#include "../lib/signame.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"
#include "cli.h"
#include "flags.h"
#include "table.h"

static const char *const job_states[] = { "pending", "running",	  "succeeded",
					  "failed",  "cancelled", NULL };

/* The nodes a job's allocations use: "-", "gpu-a100-0", "gpu-a100-0+2". */
static void node_cell(struct xp_table *t, const json_t *job)
{
	json_t *allocs = json_object_get(job, "allocations"), *a;
	const char *first = NULL;
	size_t i, others = 0;

	json_array_foreach(allocs, i, a)
	{
		const char *n = xp_cli_jstr(a, "node");
		int seen = 0;
		if (!n)
			continue;
		if (!first) {
			first = n;
			continue;
		}
		/* count distinct nodes; gangs are small, a quadratic scan is fine */
		for (size_t k = 0; k < i && !seen; k++) {
			const char *m = xp_cli_jstr(json_array_get(allocs, k), "node");
			seen = m && strcmp(m, n) == 0;
		}
		if (!seen)
			others++;
	}
	if (!first)
		xp_table_add(t, NULL);
	else if (!others)
		xp_table_add(t, first);
	else
		xp_table_addf(t, "%s+%zu", first, others);
}

/* squeue's REASON: a pending job's code, with the queue, resource and
 * use for QuotaMax, the jobs for Dependency, who for Held; else the
 * job's own reason ("preempted by job 7", "time limit 1h exceeded") */
static void reason_cell(struct xp_table *t, const json_t *job)
{
	const char *code = xp_cli_jstr(job, "pending_reason"),
		   *detail = xp_cli_jstr(job, "pending_detail");
	if (!code) {
		xp_cli_cell_str(t, job, "reason");
		return;
	}
	if (!strcmp(code, "QuotaMax") && detail && !strncmp(detail, "queue ", 6)) {
		/* "queue team-a: gpu 8/8, needs 1" -> "QuotaMax(team-a gpu 8/8)" */
		char q[64] = "", r[16] = "", use[48] = "";
		if (sscanf(detail, "queue %63[^:]: %15s %47[^,]", q, r, use) == 3) {
			xp_table_addf(t, "QuotaMax(%s %s %s)", q, r, use);
			return;
		}
	}
	if (!strcmp(code, "Dependency") && detail && !strncmp(detail, "waiting for job", 15)) {
		const char *ids = strchr(detail + 15, ' ');
		xp_table_addf(t, "Dependency(%s)", ids ? ids + 1 : "?");
		return;
	}
	if (!strcmp(code, "Held"))
		xp_table_addf(t, "Held(%s)", json_is_string(json_object_get(job, "held"))
						     ? xp_cli_jstr(job, "held")
						     : "?");
	else
		xp_table_add(t, code);
}

static void print_jobs(const json_t *list)
{
	static const char *const hdr[] = { "ID",   "NAME", "TENANT", "QUEUE", "STATE",
					   "NODE", "AGE",  "REASON", NULL };
	struct xp_table *t = xp_table_create(hdr);
	json_t *job;
	size_t i;

	json_array_foreach(json_object_get(list, "jobs"), i, job)
	{
		xp_cli_cell_int(t, job, "id");
		xp_cli_cell_str(t, job, "name");
		xp_cli_cell_str(t, job, "tenant");
		xp_cli_cell_str(t, job, "queue");
		xp_cli_cell_str(t, job, "state");
		node_cell(t, job);
		xp_cli_cell_age(t, job, "submitted_at");
		reason_cell(t, job);
	}
	if (xp_table_rows(t))
		xp_table_print(t, stdout);
	else
		printf("no jobs\n");
	xp_table_destroy(t);
}

/* a workflow's DAG: each job with what it waits for ("ok:12 any:13") */
static void print_workflow(const json_t *list)
{
	static const char *const hdr[] = { "ID", "NAME", "STATE", "AFTER", "NODE", "REASON", NULL };
	struct xp_table *t = xp_table_create(hdr);
	json_t *job, *d;
	size_t i, k;

	json_array_foreach(json_object_get(list, "jobs"), i, job)
	{
		struct xp_sb after = { 0 };
		xp_cli_cell_int(t, job, "id");
		xp_cli_cell_str(t, job, "name");
		xp_cli_cell_str(t, job, "state");
		json_array_foreach(json_object_get(json_object_get(job, "spec"), "depends_on"), k,
				   d)
		{
			const char *type = xp_cli_jstr(d, "type");
			long long id = 0;
			xp_cli_jint(d, "job", &id);
			xp_sb_printf(&after, "%s%s:%lld", after.len ? " " : "",
				     type ? type + 6 : "?", id); /* after-ok -> ok */
		}
		xp_table_add(t, after.len ? after.s : "-");
		xp_sb_free(&after);
		node_cell(t, job);
		reason_cell(t, job);
	}
	if (xp_table_rows(t))
		xp_table_print(t, stdout);
	else
		printf("no jobs in that workflow\n");
	xp_table_destroy(t);
}

int xp_verb_jobs(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "state", XP_FLAG_STR, "STATES",
		  "pending, running, succeeded, failed, cancelled (comma list)" },
		{ "queue", XP_FLAG_STR, "QUEUE", "only this queue" },
		{ "name", XP_FLAG_STR, "NAME", "only jobs of this name" },
		{ "tenant", XP_FLAG_STR, "TENANT", "only this tenant (admin tokens only)" },
		{ "workflow", XP_FLAG_STR, "NAME",
		  "only this workflow's jobs, shown as its DAG (what each waits for)" },
		{ "limit", XP_FLAG_STR, "N", "jobs per page, 1..1000 (default 100)" },
		{ "all", XP_FLAG_BOOL, NULL, "every job, oldest first (default: the newest page)" },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb verb = {
		"jobs",
		"xpool jobs [--state S] [--queue Q] [--name N] [--workflow W] [--limit N] [--all]",
		"List jobs, oldest first: your tenant's, or everyone's for an admin token.",
		NULL,
		0,
		0,
	};
	struct xp_cli x;
	struct xp_sb path = { 0 };
	json_t *reply = NULL;
	int status = 2;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	xp_sb_puts(&path, "/v1/jobs");
	const char *st = xp_flag_get(flags, "state")->sval;
	if (st) {
		size_t n;
		char **v = xp_split_list(st, &n);
		for (size_t i = 0; i < n; i++) {
			int k = 0;
			while (job_states[k] && strcmp(job_states[k], v[i]) != 0)
				k++;
			if (!job_states[k]) {
				xp_cli_errorf(&x, 2,
					      "--state: expected pending, running, succeeded, "
					      "failed or cancelled, got '%s'",
					      v[i]);
				xp_free_list(v, n);
				goto out;
			}
		}
		xp_free_list(v, n);
		xp_client_query(&path, "state", st);
	}
	static const char *const filters[] = { "queue", "name", "tenant", "workflow", NULL };
	xp_cli_query_flags(&path, flags, filters);
	if (xp_flag_get(flags, "limit")->given) {
		long lim;
		if (xp_parse_int_flag("limit", xp_flag_get(flags, "limit")->sval, 1, 1000, &lim,
				      &x.err) < 0) {
			status = xp_cli_fail("jobs", &x.err, 2);
			goto out;
		}
		xp_client_query(&path, "limit", xp_flag_get(flags, "limit")->sval);
	}
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	int all = xp_flag_get(flags, "all")->given;
	if (!all)
		xp_client_query(&path, "newest", "1");
	if (xp_cli_list(&x, path.s, "jobs", all, &reply) < 0) {
		status = xp_cli_fail_api(&x);
		goto out;
	}
	if (x.json)
		xp_cli_print_json(reply);
	else if (xp_flag_get(flags, "workflow")->given)
		print_workflow(reply);
	else
		print_jobs(reply);
	if (!all && !x.json && json_is_true(json_object_get(reply, "older")))
		fprintf(stderr, "xpool jobs: older jobs not shown (use --all, or --limit up to "
				"1000)\n");
	status = 0;
out:
	xp_sb_free(&path);
	json_decref(reply);
	return xp_cli_end(&x, status);
}

/* "python train.py --epochs 3"; a string command is shown as it is. */
static void command_text(struct xp_sb *b, const json_t *spec)
{
	json_t *cmd = json_object_get(spec, "command"), *args = json_object_get(spec, "args"), *a;
	size_t i;

	if (json_is_string(cmd))
		xp_sb_puts(b, json_string_value(cmd));
	json_array_foreach(cmd, i, a)
	{
		const char *s = json_string_value(a);
		if (b->len)
			xp_sb_putc(b, ' ');
		if (s && *s && !strpbrk(s, " \t\"'\\$"))
			xp_sb_puts(b, s);
		else
			xp_sb_printf(b, "'%s'", s ? s : "");
	}
	json_array_foreach(args, i, a)
	{
		if (b->len)
			xp_sb_putc(b, ' ');
		xp_sb_puts(b, json_string_value(a) ? json_string_value(a) : "");
	}
}

/* A quantity member in the table's units: key_base holds it in the base
 * unit (cpu_milli, memory_mib); else key holds it as written, a number
 * (cores, MiB) or a string with a unit ("500m", "32Gi"). */
static void qty_text(struct xp_sb *b, const json_t *o, const char *key_base, const char *key,
		     enum xp_qty kind)
{
	json_t *v = json_object_get(o, key);
	char u[XP_UNIT_LEN];
	long long base;
	double d;

	if (xp_cli_jint(o, key_base, &base) < 0) {
		if (json_is_number(v))
			d = json_number_value(v) * (kind == XP_QTY_CPU_MILLI ? 1000 : 1);
		else if (!json_is_string(v) || xp_parse_qty(json_string_value(v), kind, &d) < 0)
			d = -1;
		if (d < 0) {
			char *t = xp_cli_jtext(v);
			xp_sb_puts(b, t ? t : "-");
			free(t);
			return;
		}
		base = llround(d);
	}
	if (kind == XP_QTY_CPU_MILLI)
		xp_fmt_cpu(base, u);
	else
		xp_fmt_mib(base, u);
	xp_sb_puts(b, u);
}

static void mem_text(struct xp_sb *b, const json_t *o, const char *key_mib, const char *key)
{
	qty_text(b, o, key_mib, key, XP_QTY_MEM_MIB);
}

/* "8c, 32Gi, 2 gpu (500m, 20Gi, A100-SXM4-80GB|H100-SXM5-80GB, same_island)" */
static void resources_text(struct xp_sb *b, const json_t *res)
{
	json_t *d = json_object_get(res, "devices");
	long long v;

	qty_text(b, res, "cpu_milli", "cpu", XP_QTY_CPU_MILLI);
	xp_sb_puts(b, ", ");
	mem_text(b, res, "memory_mib", "memory");
	if (!json_is_object(d) || xp_cli_jint(d, "count", &v) < 0 || v == 0)
		return;
	const char *cls = xp_cli_jstr(d, "class");
	xp_sb_printf(b, ", %lld %s", v, cls ? cls : v == 1 ? "device" : "devices");
	struct xp_sb q = { 0 };
	if (xp_cli_jint(d, "compute_milli", &v) == 0 && v != 1000)
		xp_sb_printf(&q, "%s%lldm", q.len ? ", " : "", v);
	if (json_object_get(d, "memory_mib") || json_object_get(d, "memory")) {
		xp_sb_puts(&q, q.len ? ", " : "");
		mem_text(&q, d, "memory_mib", "memory");
	}
	if (xp_cli_jstr(d, "vendor"))
		xp_sb_printf(&q, "%s%s", q.len ? ", " : "", xp_cli_jstr(d, "vendor"));
	json_t *m;
	size_t i;
	json_array_foreach(json_object_get(d, "models"), i, m)
		xp_sb_printf(&q, "%s%s",
			     i	     ? "|"
			     : q.len ? ", "
				     : "",
			     json_string_value(m) ? json_string_value(m) : "?");
	const char *topo = xp_cli_jstr(d, "topology");
	if (topo && strcmp(topo, "any") != 0)
		xp_sb_printf(&q, "%s%s", q.len ? ", " : "", topo);
	if (q.len)
		xp_sb_printf(b, " (%s)", q.s);
	xp_sb_free(&q);
}

static void field(const char *key, const char *value)
{
	printf("%-12s %s\n", key, value && *value ? value : "-");
}

static void time_field(const char *key, const json_t *job, const char *member)
{
	const char *s = xp_cli_jstr(job, member);
	char age[XP_UNIT_LEN];
	int64_t ms;
	if (s && xp_time_parse(s, &ms) == 0) {
		xp_fmt_age(xp_cli_now_ms() - ms, age);
		printf("%-12s %s (%s ago)\n", key, s, age);
	} else {
		field(key, s);
	}
}

static int any_gpu_use(const json_t *allocs)
{
	size_t i;
	json_t *a;
	json_array_foreach(allocs, i, a) if (json_object_get(a, "gpu_usage")) return 1;
	return 0;
}

/* "1.2Gi, 280m" (held now, share used), "1.2Gi, 280m, 3 OOM"; "-" unreported */
static void gpu_use_cell(struct xp_table *t, const json_t *a)
{
	const json_t *g = json_object_get(a, "gpu_usage");
	long long mem = 0, milli = -1, ooms = 0, dev = 0;
	if (!g) {
		xp_table_add(t, NULL);
		return;
	}
	xp_cli_jint(g, "memory_mib", &mem);
	xp_cli_jint(g, "compute_milli_used", &milli);
	xp_cli_jint(g, "ooms_at_cap", &ooms);
	xp_cli_jint(g, "device_ooms", &dev);
	struct xp_sb b = { 0 };
	xp_sb_printf(&b, "%.1fGi", (double)mem / 1024);
	if (milli >= 0)
		xp_sb_printf(&b, ", %lldm", milli);
	if (ooms + dev)
		xp_sb_printf(&b, ", %lld OOM%s", ooms + dev, dev ? " (device full)" : "");
	xp_table_add(t, b.s);
	xp_sb_free(&b);
}

/* the nodes whose agent ran a replica without CPU and memory limits
 * (--no-limits, or xpool dev where cgroups are not writable) */
static void limits_line(const json_t *allocs)
{
	struct xp_sb b = { 0 };
	json_t *a;
	size_t i;
	json_array_foreach(allocs, i, a)
	{
		const char *lim = xp_cli_jstr(a, "limits"), *node = xp_cli_jstr(a, "node");
		if (lim && node && !strcmp(lim, "off") && !(b.s && strstr(b.s, node)))
			xp_sb_printf(&b, "%s%s", b.len ? ", " : "not enforced on ", node);
	}
	if (b.len)
		field("Limits:", b.s);
	xp_sb_free(&b);
}

/* "2", or an elastic job's "3 of 2..4 (epoch 2, 2 resizes; last: grow: ...)" */
static void replicas_text(struct xp_sb *b, const json_t *job)
{
	json_t *el = json_object_get(job, "elastic");
	if (!json_is_object(el)) {
		char *s = xp_cli_jtext(json_object_get(json_object_get(job, "spec"), "replicas"));
		xp_sb_puts(b, s ? s : "1");
		free(s);
		return;
	}
	const char *why = xp_cli_jstr(el, "last_reason");
	xp_sb_printf(b, "%lld of %lld..%lld (epoch %lld, %lld resizes%s%s)",
		     (long long)json_integer_value(json_object_get(el, "size")),
		     (long long)json_integer_value(json_object_get(el, "min")),
		     (long long)json_integer_value(json_object_get(el, "max")),
		     (long long)json_integer_value(json_object_get(el, "epoch")),
		     (long long)json_integer_value(json_object_get(el, "resizes")),
		     why ? "; last: " : "", why ? why : "");
}

static void describe_job(const json_t *job)
{
	json_t *spec = json_object_get(job, "spec"), *allocs = json_object_get(job, "allocations");
	struct xp_sb b = { 0 };
	char *s;

	s = xp_cli_jtext(json_object_get(job, "id"));
	field("ID:", s);
	free(s);
	field("Name:", xp_cli_jstr(job, "name"));
	field("Tenant:", xp_cli_jstr(job, "tenant"));
	field("Queue:", xp_cli_jstr(job, "queue"));
	s = xp_cli_jtext(json_object_get(job, "priority"));
	field("Priority:", s);
	free(s);
	field("State:", xp_cli_jstr(job, "state"));
	field("Reason:", xp_cli_jstr(job, "reason"));
	if (xp_cli_jstr(job, "pending_reason")) { /* squeue's code, then what it means */
		const char *d = xp_cli_jstr(job, "pending_detail");
		printf("%-12s %s%s%s\n", "Waiting:", xp_cli_jstr(job, "pending_reason"),
		       d && *d ? ": " : "", d ? d : "");
	}
	time_field("Submitted:", job, "submitted_at");
	time_field("Started:", job, "started_at");
	time_field("Finished:", job, "finished_at");
	if (xp_cli_jstr(job, "deadline")) {
		xp_sb_printf(&b, "%s (%s)", xp_cli_jstr(job, "deadline"),
			     xp_cli_jstr(job, "deadline_status")
				     ? xp_cli_jstr(job, "deadline_status")
				     : "?");
		field("Deadline:", b.s);
		xp_sb_reset(&b);
	}
	s = xp_cli_jtext(json_object_get(job, "exit_code"));
	const char *sig = xp_signal_name((int)json_integer_value(json_object_get(job, "signal")));
	if (s && sig) /* "137 (SIGKILL)" */
		xp_sb_printf(&b, "%s (%s)", s, sig);
	field("Exit code:", b.len ? b.s : s);
	xp_sb_reset(&b);
	free(s);
	limits_line(allocs);
	command_text(&b, spec);
	field("Command:", b.s);
	xp_sb_reset(&b);
	replicas_text(&b, job);
	field("Replicas:", b.s);
	xp_sb_reset(&b);
	if (json_is_object(json_object_get(spec, "resources"))) {
		resources_text(&b, json_object_get(spec, "resources"));
		xp_sb_puts(&b, " per replica");
		field("Resources:", b.s);
	}
	xp_sb_free(&b);
	if (!json_array_size(allocs))
		return;
	static const char *const hdr[] = { "REPLICA", "NODE",	 "CPU",	    "MEMORY",
					   "DEVICES", "MODEL",	 "SHARE",   "DEV-MEM",
					   "GPU-USE", NULL };
	struct xp_table *t = xp_table_create(hdr);
	json_t *a;
	size_t i;
	json_array_foreach(allocs, i, a)
	{
		json_t *devs = json_object_get(a, "devices"), *d, *d0 = json_array_get(devs, 0);
		struct xp_sb idx = { 0 }, models = { 0 };
		size_t k;
		xp_cli_cell_int(t, a, "replica");
		xp_cli_cell_str(t, a, "node");
		xp_cli_cell_cpu(t, a, "cpu_milli");
		xp_cli_cell_mib(t, a, "memory_mib");
		json_array_foreach(devs, k, d)
		{
			long long ix;
			const char *m = xp_cli_jstr(d, "model");
			if (xp_cli_jint(d, "index", &ix) == 0)
				xp_sb_printf(&idx, "%s%lld", idx.len ? "," : "", ix);
			if (m && !(models.s && strstr(models.s, m)))
				xp_sb_printf(&models, "%s%s", models.len ? "," : "", m);
		}
		xp_table_add(t, idx.s);
		xp_table_add(t, models.s);
		long long v;
		if (d0 && xp_cli_jint(d0, "compute_milli", &v) == 0)
			xp_table_addf(t, "%lldm", v);
		else
			xp_table_add(t, NULL);
		if (d0)
			xp_cli_cell_mib(t, d0, "memory_mib");
		else
			xp_table_add(t, NULL);
		gpu_use_cell(t, a);
		xp_sb_free(&idx);
		xp_sb_free(&models);
	}
	printf("Allocations:%s\n",
	       any_gpu_use(allocs) ? " (GPU-USE: device memory held, compute share used, "
				     "from the vGPU account at the last heartbeat)"
				   : "");
	struct xp_sb r = { 0 };
	xp_table_render(t, &r);
	/* indent the table under its heading */
	for (char *line = r.s, *nl; line && *line; line = nl + 1) {
		nl = strchr(line, '\n');
		printf("  %.*s\n", (int)(nl - line), line);
	}
	xp_sb_free(&r);
	xp_table_destroy(t);
}

static const struct xp_cli_verb job_verb = {
	"job",
	"xpool job ID [-o table|json]",
	"Show one job: its state, spec, times and where its replicas run.",
	"ID",
	1,
	1,
};

/* `job ID` and `explain ID`: GET /v1/jobs/ID<suffix>, then -o json or print */
static int show_one(int argc, char **argv, const struct xp_cli_verb *verb, const char *suffix,
		    void (*print)(long long id, const json_t *reply))
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	struct xp_cli x;
	json_t *reply = NULL;
	long long id;
	char path[64];
	int status = 2;

	if (xp_cli_start(&x, verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_cli_parse_id(&x, "job ID", x.args[0], &id) < 0)
		goto out;
	status = 1;
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	snprintf(path, sizeof(path), "/v1/jobs/%lld%s", id, suffix);
	if (xp_cli_call(&x, "GET", path, NULL, &reply) < 0) {
		xp_cli_fail_api(&x);
		goto out;
	}
	if (x.json)
		xp_cli_print_json(reply);
	else
		print(id, reply);
	status = 0;
out:
	json_decref(reply);
	return xp_cli_end(&x, status);
}

static void describe_job_by_id(long long id, const json_t *job)
{
	(void)id;
	describe_job(job);
}

int xp_verb_job(int argc, char **argv)
{
	return show_one(argc, argv, &job_verb, "", describe_job_by_id);
}

/* "412 nodes: no matching device"; "37 nodes: CPU short by 4000m" */
static void reason_line(const json_t *r)
{
	long long n, v;
	const char *why = xp_cli_jstr(r, "reason");
	printf("%lld nodes: %s", xp_cli_jint(r, "nodes", &n) == 0 ? n : 0, why ? why : "?");
	if (xp_cli_jint(r, "short_by_milli", &v) == 0)
		printf(" by %lldm", v);
	else if (xp_cli_jint(r, "short_by_mib", &v) == 0)
		printf(" by %lldMi", v);
	putchar('\n');
}

static void print_explain(long long id, const json_t *e)
{
	const char *state = xp_cli_jstr(e, "state"), *sum = xp_cli_jstr(e, "summary");
	json_t *fits = json_object_get(e, "fits_now"), *reasons = json_object_get(e, "reasons"), *r;
	long long nodes;
	size_t i;

	if (state && strcmp(state, "pending") != 0) {
		/* nothing to explain: the controller's word for it, or the state */
		if (sum && *sum)
			printf("%s\n", sum);
		else
			printf("job %lld is %s\n", id, state);
		return;
	}
	const char *code = xp_cli_jstr(e, "pending_reason");
	if (code && (!strcmp(code, "Held") || !strcmp(code, "Dependency") ||
		     !strcmp(code, "DependencyNeverSatisfied"))) {
		printf("job %lld is pending (%s): %s\n", id, code, sum ? sum : "");
		return;
	}
	if (json_is_true(json_object_get(e, "quota_blocked"))) {
		printf("job %lld is pending (QuotaMax): %s\n", id,
		       sum ? sum : "its queue is at its max");
		return;
	}
	char why[64] = "";
	if (code)
		snprintf(why, sizeof(why), " (%s)", code);
	if (json_is_true(fits))
		printf("job %lld is pending%s and fits now: the next scheduling cycle places it\n",
		       id, why);
	else if (xp_cli_jint(e, "nodes", &nodes) == 0)
		printf("job %lld is pending%s: it fits on none of %lld nodes now\n", id, why,
		       nodes);
	else
		printf("job %lld is pending%s\n", id, why);
	const char *detail = xp_cli_jstr(e, "pending_detail");
	if (code && !strcmp(code, "Search") && detail) /* the batch search placed others */
		printf("%s\n", detail);
	/* the controller's own summary, one reason a line; else from the list */
	if (sum && *sum && json_array_size(reasons)) {
		for (const char *p = sum; *p;) {
			const char *semi = strstr(p, "; ");
			size_t n = semi ? (size_t)(semi - p) : strlen(p);
			printf("%.*s\n", (int)n, p);
			p += n + (semi ? 2 : 0);
		}
		return;
	}
	json_array_foreach(reasons, i, r) reason_line(r);
}

int xp_verb_explain(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"explain",
		"xpool explain ID [-o table|json]",
		"Say why a pending job is not placed: per filter, how many nodes it rejected\n"
		"(\"412 nodes: no matching device\"). For a gang: its first unplaced replica.",
		"ID",
		1,
		1,
	};
	return show_one(argc, argv, &verb, "/explain", print_explain);
}

int xp_verb_logs(int argc, char **argv)
{
	struct xp_flag flags[] = {
		XP_CLIENT_FLAGS,
		{ "stderr", XP_FLAG_BOOL, NULL, "the task's standard error instead of its output" },
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb verb = {
		"logs",
		"xpool logs ID [--stderr] [-o table|json]",
		"Print a job's output (text as it is; -o json prints it as one JSON string).\n"
		"Jobs on agent nodes have what their tasks wrote, one section per replica;\n"
		"jobs on emulated nodes have the emulator's lines.",
		"ID",
		1,
		1,
	};
	static const char *const accept[] = { "Accept: text/plain", NULL };
	struct xp_cli x;
	char path[64], *text = NULL;
	size_t len = 0;
	long long id;
	int status = 2;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_cli_parse_id(&x, "job ID", x.args[0], &id) < 0)
		goto out;
	status = 1;
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	snprintf(path, sizeof(path), "/v1/jobs/%lld/logs%s", id,
		 xp_flag_get(flags, "stderr")->bval ? "?stream=stderr" : "");
	if (xp_client_call(x.client, "GET", path, accept, NULL, NULL, 0, &text, &len, &x.err) < 0) {
		xp_cli_fail_api(&x);
		goto out;
	}
	if (x.json) {
		json_t *s = json_stringn(text, len);
		if (!s) {
			/* not UTF-8: keep what can be shown */
			for (size_t i = 0; i < len; i++)
				if ((unsigned char)text[i] >= 0x80 || text[i] == '\0')
					text[i] = '?';
			s = json_stringn(text, len);
		}
		xp_cli_print_json(s);
		json_decref(s);
	} else {
		fwrite(text, 1, len, stdout);
	}
	status = 0;
out:
	free(text);
	return xp_cli_end(&x, status);
}
