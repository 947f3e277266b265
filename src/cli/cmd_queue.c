/*
 * cmd_queue: `xpool queues` (the tree with quota and usage) and `xpool
 * queue create|set|delete` (admin). Quotas are given per resource as
 * RES=QTY, repeated or comma-separated: --guarantee gpu=4,cpu=32
 * --max gpu=8,memory=512Gi; `--max gpu=none` lifts a max (set only).
 * `set` changes only what its flags name: it reads the queue, changes
 * those fields and sends the whole quota back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../client/client.h"
#include "../lib/parse.h"
#include "../lib/strbuf.h"
#include "cli.h"
#include "flags.h"
#include "table.h"

static const char *const res_order[] = { "gpu", "npu", "fpga",	 "asic", "dpu",
					 "cim", "cpu", "memory", NULL };

/* "gpu 6/4/8" per resource with a quota or usage: used/guarantee/max */
static void quota_cell(struct xp_table *t, const json_t *q)
{
	struct xp_sb sb = { 0 };
	json_t *quota = json_object_get(q, "quota");
	for (const char *const *r = res_order; *r; r++) {
		json_t *e = json_object_get(quota, *r);
		if (!e)
			continue;
		const char *u = xp_cli_jstr(e, "used"), *g = xp_cli_jstr(e, "guarantee"),
			   *m = xp_cli_jstr(e, "max");
		xp_sb_printf(&sb, "%s%s %s/%s/%s", sb.len ? ", " : "", *r, u ? u : "0", g ? g : "0",
			     m ? m : "-");
	}
	xp_table_add(t, sb.len ? sb.s : "-");
	xp_sb_free(&sb);
}

int xp_verb_queues(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"queues",
		"xpool queues [-o table|json]",
		"List the queues: parent, priority, weight, preemption policy, jobs, dominant "
		"share and, per resource, used/guarantee/max ('-': no max).",
		NULL,
		0,
		0,
	};
	static const char *const hdr[] = { "NAME",    "PARENT",	 "PRIORITY",
					   "WEIGHT",  "PREEMPT", "PENDING",
					   "RUNNING", "SHARE",	 "QUOTA (used/guarantee/max)",
					   NULL };
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	struct xp_cli x;
	json_t *reply = NULL, *q;
	size_t i;
	int status = 1;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	if (xp_cli_list(&x, "/v1/queues", "queues", 1, &reply) < 0) {
		xp_cli_fail_api(&x);
		goto out;
	}
	if (x.json) {
		xp_cli_print_json(reply);
	} else {
		struct xp_table *t = xp_table_create(hdr);
		json_array_foreach(json_object_get(reply, "queues"), i, q)
		{
			xp_cli_cell_str(t, q, "name");
			xp_cli_cell_str(t, q, "parent");
			xp_cli_cell_int(t, q, "priority");
			xp_cli_cell_int(t, q, "weight");
			xp_cli_cell_str(t, q, "preempt");
			xp_cli_cell_int(t, q, "pending");
			xp_cli_cell_int(t, q, "running");
			xp_table_addf(t, "%.3f", json_real_value(json_object_get(q, "share")));
			quota_cell(t, q);
		}
		if (xp_table_rows(t))
			xp_table_print(t, stdout);
		else
			printf("no queues\n");
		xp_table_destroy(t);
	}
	status = 0;
out:
	json_decref(reply);
	return xp_cli_end(&x, status);
}

/* RES=QTY[,RES=QTY...] into quota[RES][key]; "none" removes the key */
static int quota_flag(struct xp_cli *x, const char *flag, const char *key, const char *val,
		      json_t *quota)
{
	char *copy = strdup(val), *save = NULL;
	int rc = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq || eq == tok || !eq[1]) {
			rc = xp_cli_errorf(x, 2, "--%s: expected RESOURCE=QUANTITY, got '%s'", flag,
					   tok);
			break;
		}
		*eq = 0;
		json_t *e = json_object_get(quota, tok);
		if (!e) {
			e = json_object();
			json_object_set_new(quota, tok, e);
		}
		if (!strcmp(eq + 1, "none"))
			json_object_del(e, key);
		else
			json_object_set_new(e, key, json_string(eq + 1));
	}
	free(copy);
	return rc ? -1 : 0;
}

/* create (update 0) or set (1) */
static int queue_define(int argc, char **argv, int update)
{
	struct xp_flag flags[] = {
		{ "parent", XP_FLAG_STR, "QUEUE", "the parent queue (create only; default: none)" },
		{ "priority", XP_FLAG_STR, "N", "-1000..1000, higher is served first (default 0)" },
		{ "weight", XP_FLAG_STR, "W", "fair-share weight, 1..1000000 (default 1)" },
		{ "preempt", XP_FLAG_STR, "POLICY",
		  "never, reclaim (take back lent capacity; default) or priority (also "
		  "lower-priority jobs of this queue)" },
		{ "aging", XP_FLAG_STR, "DURATION",
		  "a pending job's order counts +1 priority per DURATION waited, up to +10" },
		{ "guarantee", XP_FLAG_STR, "RES=QTY",
		  "guaranteed quota, e.g. gpu=4,cpu=32,memory=256Gi (repeatable)" },
		{ "max", XP_FLAG_STR, "RES=QTY",
		  "most it may use, borrowing included; RES=none: "
		  "no limit (repeatable)" },
		{ "allow", XP_FLAG_STR, "TENANT,...",
		  "only these tenants may submit into it (Slurm's AllowAccounts); 'all': "
		  "every tenant (the default)" },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb vcreate = {
		"queue create",
		"xpool queue create NAME [--parent Q] [--priority N] [--weight W] [--preempt P] "
		"[--guarantee RES=QTY] [--max RES=QTY] [--allow TENANT,...]",
		"Create a queue (admin). Resources: cpu, memory, gpu, npu, fpga, asic, dpu, cim.",
		"NAME",
		1,
		1,
	};
	static const struct xp_cli_verb vset = {
		"queue set",
		"xpool queue set NAME [--priority N] [--weight W] [--preempt P] [--guarantee "
		"RES=QTY] [--max RES=QTY] [--allow TENANT,...|all]",
		"Change a queue (admin): only the fields the flags name.",
		"NAME",
		1,
		1,
	};
	struct xp_cli x;
	json_t *body = NULL, *cur = NULL;
	struct xp_sb done = { 0 }, path = { 0 };
	int status = 2;

	if (xp_cli_start(&x, update ? &vset : &vcreate, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	const char *name = x.args[0];
	if (xp_cli_check_name(&x, "queue NAME", name) < 0)
		goto out;
	body = update ? json_object() : json_pack("{s:s}", "name", name);
	const struct xp_flag *f;
	if ((f = xp_flag_get(flags, "parent"))->given) {
		if (update) {
			xp_cli_errorf(&x, 2,
				      "--parent: a queue cannot move (delete and create it)");
			goto out;
		}
		json_object_set_new(body, "parent", json_string(f->sval));
	}
	if ((f = xp_flag_get(flags, "priority"))->given) {
		long p;
		if (xp_parse_int_flag("priority", f->sval, -1000, 1000, &p, &x.err) < 0) {
			xp_cli_fail(x.v->verb, &x.err, 2);
			goto out;
		}
		json_object_set_new(body, "priority", json_integer(p));
	}
	if ((f = xp_flag_get(flags, "weight"))->given) {
		int64_t v;
		if (xp_parse_i64(f->sval, 1, 1000000, &v) < 0) {
			xp_cli_errorf(
				&x, 2,
				"--weight: expected a positive integer (1..1000000), got '%s'",
				f->sval);
			goto out;
		}
		json_object_set_new(body, "weight", json_integer(v));
	}
	if ((f = xp_flag_get(flags, "preempt"))->given && strcmp(f->sval, "never") &&
	    strcmp(f->sval, "reclaim") && strcmp(f->sval, "priority")) {
		xp_cli_errorf(&x, 2, "--preempt: expected never, reclaim or priority, got '%s'",
			      f->sval);
		goto out;
	}
	if ((f = xp_flag_get(flags, "preempt"))->given)
		json_object_set_new(body, "preempt", json_string(f->sval));
	if ((f = xp_flag_get(flags, "aging"))->given) /* the controller checks it, by field */
		json_object_set_new(body, "aging", json_string(f->sval));
	if ((f = xp_flag_get(flags, "allow"))->given) { /* names checked by the controller */
		json_t *a = json_array();
		size_t n;
		char **l = xp_split_list(f->sval, &n);
		for (size_t i = 0; strcmp(f->sval, "all") && i < n; i++)
			json_array_append_new(a, json_string(l[i]));
		xp_free_list(l, n);
		json_object_set_new(body, "allow", a);
	}
	const struct xp_flag *g = xp_flag_get(flags, "guarantee"), *m = xp_flag_get(flags, "max");
	xp_sb_puts(&path, "/v1/queues/");
	xp_client_escape(&path, name);
	if (g->given || m->given) {
		json_t *quota = json_object();
		if (update) { /* start from the queue's quota, less what it reports as used */
			if (xp_cli_connect(&x) < 0 ||
			    xp_cli_call(&x, "GET", path.s, NULL, &cur) < 0) {
				json_decref(quota);
				status = x.status ? x.status : xp_cli_fail_api(&x);
				goto out;
			}
			const char *k;
			json_t *e;
			json_object_foreach(json_object_get(cur, "quota"), k, e)
			{
				json_t *c = json_deep_copy(e);
				json_object_del(c, "used");
				if (json_object_size(c))
					json_object_set_new(quota, k, c);
				else
					json_decref(c);
			}
		}
		json_object_set_new(body, "quota", quota);
		if ((g->given && quota_flag(&x, "guarantee", "guarantee", g->sval, quota) < 0) ||
		    (m->given && quota_flag(&x, "max", "max", m->sval, quota) < 0))
			goto out;
	}
	xp_sb_printf(&done, "queue %s %s", name, update ? "changed" : "created");
	status = xp_cli_mutate(&x, update ? "PATCH" : "POST", update ? path.s : "/v1/queues", body,
			       done.s);
out:
	json_decref(body);
	json_decref(cur);
	xp_sb_free(&done);
	xp_sb_free(&path);
	return xp_cli_end(&x, status);
}

static int queue_create(int argc, char **argv)
{
	return queue_define(argc, argv, 0);
}

static int queue_set(int argc, char **argv)
{
	return queue_define(argc, argv, 1);
}

static int queue_delete(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"queue delete",
		"xpool queue delete NAME",
		"Delete a queue without jobs or child queues (admin).",
		"NAME",
		1,
		1,
	};
	return xp_cli_delete_named(argc, argv, &verb, "/v1/queues/", "queue NAME", 0);
}

int xp_verb_queue(int argc, char **argv)
{
	static const struct xp_cli_sub subs[] = {
		{ "create", queue_create, "create a queue (admin)" },
		{ "set", queue_set, "change a queue's priority, weight, policy or quota (admin)" },
		{ "delete", queue_delete, "delete an empty queue (admin)" },
		{ NULL, NULL, NULL },
	};
	return xp_cli_dispatch("queue", subs, argc, argv);
}
