/*
 * cmd_jobedit: the verbs that change jobs after submit, as Slurm users
 * know them - cancel (scancel: by ID, or every job a selector matches),
 * hold and release (scontrol hold/release), update (scontrol update of a
 * pending job: name, priority, queue, time limit).
 *
 * Each job is one request (POST /v1/jobs/ID/cancel|hold|release, PATCH
 * /v1/jobs/ID); a selector first lists the matching jobs through GET
 * /v1/jobs, every page, so what is cancelled is what a `jobs` with the
 * same flags shows. One failure does not stop the rest; the exit status
 * is 1 when any failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../client/client.h"
#include "../lib/strbuf.h"
#include "../lib/xalloc.h"
#include "cli.h"
#include "flags.h"

/* POST (or PATCH with body) to each job's path; "job 7 held" per job */
static int each_job(struct xp_cli *x, const long long *ids, size_t n, const char *method,
		    const char *suffix, json_t *body, const char *done)
{
	int status = 0;
	for (size_t i = 0; i < n; i++) {
		char path[80], self[40];
		json_t *reply = NULL;
		snprintf(path, sizeof(path), "/v1/jobs/%lld%s", ids[i], suffix);
		if (xp_cli_call(x, method, path, body, &reply) < 0) {
			snprintf(self, sizeof(self), "job %lld", ids[i]);
			if (n > 1 && !strstr(x->err.text, self))
				xp_err_prefix(&x->err, "%s: ", self);
			status = xp_cli_fail_api(x);
			if (x->err.code == XP_EUNAVAIL)
				break; /* the rest would fail the same way */
			continue;
		}
		if (x->json)
			xp_cli_print_json(reply);
		else
			printf("job %lld %s\n", ids[i], done);
		json_decref(reply);
	}
	return status;
}

static long long *parse_ids(struct xp_cli *x, size_t *n)
{
	long long *ids = XNEWV(long long, (size_t)x->nargs + 1);
	for (int i = 0; i < x->nargs; i++)
		if (xp_cli_parse_id(x, "job ID", x->args[i], &ids[i]) < 0) {
			free(ids);
			return NULL;
		}
	*n = (size_t)x->nargs;
	return ids;
}

/* hold and release: the same shape */
static int hold_verb(int argc, char **argv, const struct xp_cli_verb *verb, const char *suffix,
		     const char *done)
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	struct xp_cli x;
	long long *ids = NULL;
	size_t n = 0;
	int status = 2;

	if (xp_cli_start(&x, verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (!(ids = parse_ids(&x, &n)))
		goto out;
	status = 1;
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	status = each_job(&x, ids, n, "POST", suffix, NULL, done);
out:
	free(ids);
	return xp_cli_end(&x, status);
}

int xp_verb_hold(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"hold",
		"xpool hold ID [ID...]",
		"Keep pending jobs from starting (Slurm's scontrol hold). A tenant's hold\n"
		"is released by the tenant or an admin, an admin's only by an admin;\n"
		"`xpool jobs` shows them as Held(user) or Held(admin).",
		"ID",
		1,
		-1,
	};
	return hold_verb(argc, argv, &verb, "/hold", "held");
}

int xp_verb_release(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"release",
		"xpool release ID [ID...]",
		"Let held jobs start again (Slurm's scontrol release).",
		"ID",
		1,
		-1,
	};
	return hold_verb(argc, argv, &verb, "/release", "released");
}

int xp_verb_update(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "name", XP_FLAG_STR, "NAME", "a new name" },
		{ "priority", XP_FLAG_STR, "N", "a new priority, -1000..1000" },
		{ "queue", XP_FLAG_STR, "QUEUE", "move it to this queue" },
		{ "time-limit", XP_FLAG_STR, "D", "a new time limit: 2h, or Slurm's forms" },
		{ "time", XP_FLAG_STR, "D", "the same as --time-limit (Slurm's --time)", 't' },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb verb = {
		"update",
		"xpool update ID [ID...] [--name N] [--priority P] [--queue Q] [--time-limit D]",
		"Change pending jobs (Slurm's scontrol update): only what the flags name.\n"
		"A running job is not changed (409).",
		"ID",
		1,
		-1,
	};
	struct xp_cli x;
	long long *ids = NULL;
	json_t *body;
	size_t n = 0;
	int status = 2;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	body = json_object();
	if (!(ids = parse_ids(&x, &n)))
		goto out;
	const struct xp_flag *f;
	if ((f = xp_flag_get(flags, "name"))->given)
		json_object_set_new(body, "name", json_string(f->sval));
	if ((f = xp_flag_get(flags, "queue"))->given)
		json_object_set_new(body, "queue", json_string(f->sval));
	if ((f = xp_flag_get(flags, "priority"))->given) {
		long p;
		if (xp_parse_int_flag("priority", f->sval, -1000, 1000, &p, &x.err) < 0) {
			status = xp_cli_fail("update", &x.err, 2);
			goto out;
		}
		json_object_set_new(body, "priority", json_integer(p));
	}
	const struct xp_flag *tl = xp_flag_get(flags, "time-limit"), *t = xp_flag_get(flags, "time");
	if (tl->given || t->given) {
		const char *d = tl->given ? tl->sval : t->sval;
		json_t *v = tl->given && t->given ? NULL : xp_cli_time_limit(d);
		if (!v) {
			xp_cli_errorf(&x, 2, "--time-limit: %s, got '%s'",
				      tl->given && t->given ? "give --time or --time-limit, not both"
							    : XP_CLI_TIME_LIMIT_FORMS,
				      d);
			goto out;
		}
		json_object_set_new(body, "time_limit", v);
	}
	if (!json_object_size(body)) {
		xp_cli_errorf(&x, 2, "nothing to change: give --name, --priority, --queue or "
				     "--time-limit");
		goto out;
	}
	status = 1;
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	status = each_job(&x, ids, n, "PATCH", "", body, "updated");
out:
	json_decref(body);
	free(ids);
	return xp_cli_end(&x, status);
}

/* the ids of every job the selector flags match, in any state but the
 * ended ones (scancel --state/--name/--partition/--account) */
static int select_jobs(struct xp_cli *x, struct xp_flag *flags, long long **ids, size_t *n)
{
	static const char *const filters[] = { "queue", "name", "tenant", NULL };
	struct xp_sb path = { 0 };
	json_t *reply = NULL, *j;
	size_t i;
	const char *st = xp_flag_get(flags, "state")->sval;
	xp_sb_puts(&path, "/v1/jobs");
	xp_client_query(&path, "state", st ? st : "pending,running");
	xp_cli_query_flags(&path, flags, filters);
	xp_client_query(&path, "limit", "1000");
	int rc = xp_cli_list(x, path.s, "jobs", 1, &reply);
	xp_sb_free(&path);
	if (rc < 0)
		return -1;
	json_t *a = json_object_get(reply, "jobs");
	*ids = XNEWV(long long, json_array_size(a) + 1);
	*n = 0;
	json_array_foreach(a, i, j)
	{
		long long id;
		if (xp_cli_jint(j, "id", &id) == 0)
			(*ids)[(*n)++] = id;
	}
	json_decref(reply);
	return 0;
}

int xp_verb_cancel(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "state", XP_FLAG_STR, "STATES", "pending and/or running (comma list)" },
		{ "name", XP_FLAG_STR, "NAME", "every job of this name" },
		{ "queue", XP_FLAG_STR, "QUEUE", "every job of this queue" },
		{ "tenant", XP_FLAG_STR, "TENANT", "every job of this tenant (admin tokens only)" },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb verb = {
		"cancel",
		"xpool cancel ID [ID...] | --state S | --name N | --queue Q | --tenant T",
		"Cancel pending or running jobs; their devices are freed at once. With\n"
		"selectors instead of IDs, every pending or running job they all match\n"
		"(Slurm's scancel --state/--name/--partition/--account).",
		"ID",
		0,
		-1,
	};
	struct xp_cli x;
	long long *ids = NULL;
	size_t n = 0;
	int status = 2, selectors = 0;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	static const char *const sel[] = { "state", "name", "queue", "tenant", NULL };
	for (int i = 0; sel[i]; i++)
		selectors += xp_flag_get(flags, sel[i])->given;
	if (x.nargs && selectors) {
		xp_cli_errorf(&x, 2, "give job IDs or selectors (--state, --name, --queue, "
				     "--tenant), not both");
		goto out;
	}
	if (!x.nargs && !selectors) {
		xp_cli_errorf(&x, 2, "which jobs? give job IDs or selectors (--state, --name, "
				     "--queue, --tenant)");
		goto out;
	}
	const char *st = xp_flag_get(flags, "state")->sval;
	if (st) {
		size_t k;
		char **v = xp_split_list(st, &k);
		for (size_t i = 0; i < k; i++)
			if (strcmp(v[i], "pending") && strcmp(v[i], "running")) {
				xp_cli_errorf(&x, 2,
					      "--state: only pending or running jobs are cancelled, "
					      "got '%s'",
					      v[i]);
				xp_free_list(v, k);
				goto out;
			}
		xp_free_list(v, k);
	}
	if (x.nargs && !(ids = parse_ids(&x, &n)))
		goto out;
	status = 1;
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	if (selectors) {
		if (select_jobs(&x, flags, &ids, &n) < 0) {
			status = xp_cli_fail_api(&x);
			goto out;
		}
		if (!n && !x.json)
			printf("no pending or running job matches\n");
	}
	status = each_job(&x, ids, n, "POST", "/cancel", NULL, "cancelled");
out:
	free(ids);
	return xp_cli_end(&x, status);
}
