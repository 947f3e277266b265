/*
 * cmd_admin: tenants and tokens - `xpool tenants`, `xpool tenant create`,
 * `xpool tokens`, `xpool token create|revoke` (queues: cmd_queue.c), and
 * the helpers the admin verbs share. They need an admin token; the
 * controller says so (403) when it is missing.
 *
 * Two-word verbs dispatch on their second word; each sub-verb has its own
 * flags and --help. `token create` prints the new secret on a line of its
 * own (it is shown only this once), so a script can take the last line.
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

/* `xpool WORD SUB ...`: run SUB, or explain the choices. */
int xp_cli_dispatch(const char *word, const struct xp_cli_sub *subs, int argc, char **argv)
{
	int help = argc < 1 || !strcmp(argv[0], "-h") || !strcmp(argv[0], "--help");
	if (!help)
		for (const struct xp_cli_sub *s = subs; s->name; s++)
			if (!strcmp(argv[0], s->name))
				return s->fn(argc - 1, argv + 1);
	FILE *out = help && argc >= 1 ? stdout : stderr;
	if (!help)
		fprintf(stderr, "xpool %s: unknown subcommand '%s'\n", word, argv[0]);
	else if (argc < 1)
		fprintf(stderr, "xpool %s: missing subcommand\n", word);
	fprintf(out, "usage: xpool %s <subcommand> [flags]   (xpool %s <subcommand> --help)\n\n",
		word, word);
	for (const struct xp_cli_sub *s = subs; s->name; s++)
		fprintf(out, "  %-8s %s\n", s->name, s->about);
	return help && argc >= 1 ? 0 : 2;
}

/* A list verb: GET path, print key's items as a table of the given
 * columns (member names; a "?" prefix shows true/false). */
static int list_verb(int argc, char **argv, const struct xp_cli_verb *verb, const char *path,
		     const char *key, const char *const *hdr, const char *const *members)
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	struct xp_cli x;
	json_t *reply = NULL, *item;
	size_t i;
	int status = 1;

	if (xp_cli_start(&x, verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	if (xp_cli_list(&x, path, key, 1, &reply) < 0) {
		xp_cli_fail_api(&x);
		goto out;
	}
	if (x.json) {
		xp_cli_print_json(reply);
	} else {
		struct xp_table *t = xp_table_create(hdr);
		json_array_foreach(json_object_get(reply, key), i,
				   item) for (const char *const *m = members; *m; m++)
			xp_cli_cell_str(t, item, *m);
		if (xp_table_rows(t))
			xp_table_print(t, stdout);
		else
			printf("no %s\n", key);
		xp_table_destroy(t);
	}
	status = 0;
out:
	json_decref(reply);
	return xp_cli_end(&x, status);
}

int xp_verb_tenants(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"tenants",
		"xpool tenants [-o table|json]",
		"List the tenants and how many jobs each has (admin).",
		NULL,
		0,
		0,
	};
	static const char *const hdr[] = { "NAME", "JOBS", NULL };
	static const char *const members[] = { "name", "jobs", NULL };
	return list_verb(argc, argv, &verb, "/v1/tenants", "tenants", hdr, members);
}

int xp_verb_tokens(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"tokens",
		"xpool tokens [-o table|json]",
		"List the API tokens (never their secrets) (admin).",
		NULL,
		0,
		0,
	};
	static const char *const hdr[] = { "ID", "TENANT", "NAME", "SCOPE", "NODE", NULL };
	static const char *const members[] = { "id", "tenant", "name", "scope", "node", NULL };
	return list_verb(argc, argv, &verb, "/v1/tokens", "tokens", hdr, members);
}

int xp_cli_mutate(struct xp_cli *x, const char *method, const char *path, json_t *body,
		  const char *done)
{
	json_t *reply = NULL;
	int status = 1;
	if (xp_cli_connect(x) < 0)
		return x->status;
	if (xp_cli_call(x, method, path, body, &reply) < 0) {
		xp_cli_fail_api(x);
		goto out;
	}
	if (x->json)
		xp_cli_print_json(reply);
	else
		printf("%s\n", done);
	status = 0;
out:
	json_decref(reply);
	return status;
}

int xp_cli_delete_named(int argc, char **argv, const struct xp_cli_verb *verb, const char *prefix,
			const char *what, int numeric)
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	struct xp_cli x;
	struct xp_sb path = { 0 }, done = { 0 };
	long long id;
	int status = 2;

	if (xp_cli_start(&x, verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (numeric ? xp_cli_parse_id(&x, what, x.args[0], &id) < 0
		    : xp_cli_check_name(&x, what, x.args[0]) < 0)
		goto out;
	xp_sb_puts(&path, prefix);
	xp_client_escape(&path, x.args[0]);
	xp_sb_printf(&done, "%.*s %s %s", (int)strcspn(what, " "), what, x.args[0],
		     numeric ? "revoked" : "deleted");
	status = xp_cli_mutate(&x, "DELETE", path.s, NULL, done.s);
out:
	xp_sb_free(&path);
	xp_sb_free(&done);
	return xp_cli_end(&x, status);
}

static int tenant_create(int argc, char **argv)
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	static const struct xp_cli_verb verb = {
		"tenant create",
		"xpool tenant create NAME",
		"Create a tenant (admin).",
		"NAME",
		1,
		1,
	};
	struct xp_cli x;
	json_t *body = NULL;
	struct xp_sb done = { 0 };
	int status = 2;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_cli_check_name(&x, "tenant NAME", x.args[0]) < 0)
		goto out;
	body = json_pack("{s:s}", "name", x.args[0]);
	xp_sb_printf(&done, "tenant %s created", x.args[0]);
	status = xp_cli_mutate(&x, "POST", "/v1/tenants", body, done.s);
out:
	json_decref(body);
	xp_sb_free(&done);
	return xp_cli_end(&x, status);
}

int xp_verb_tenant(int argc, char **argv)
{
	static const struct xp_cli_sub subs[] = {
		{ "create", tenant_create, "create a tenant (admin)" },
		{ NULL, NULL, NULL },
	};
	return xp_cli_dispatch("tenant", subs, argc, argv);
}

static int token_create(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "tenant", XP_FLAG_STR, "TENANT", "the tenant the token acts for (required)" },
		{ "name", XP_FLAG_STR, "NAME", "a name for the token, e.g. ci (required)" },
		{ "admin", XP_FLAG_BOOL, NULL, "an admin token" },
		{ "bootstrap", XP_FLAG_BOOL, NULL,
		  "a bootstrap token: agents trade it for their own node's credential "
		  "(xpool agent --token-file) and it calls nothing else" },
		{ "node", XP_FLAG_STR, "NODE",
		  "a credential for node NODE's agent alone (register, heartbeat, report, "
		  "assignments of that node)" },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb verb = {
		"token create",
		"xpool token create --tenant TENANT --name NAME [--admin | --bootstrap | --node "
		"NODE]",
		"Create an API token (admin). Its secret is printed only this once, on the\n"
		"last line.",
		NULL,
		0,
		0,
	};
	struct xp_cli x;
	json_t *body = NULL, *reply = NULL;
	int status = 2;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	static const char *const required[] = { "tenant", "name", NULL };
	for (const char *const *r = required; *r; r++) {
		char what[32];
		if (!xp_flag_get(flags, *r)->given) {
			xp_cli_errorf(&x, 2, "--%s is required (usage: %s)", *r, verb.synopsis);
			goto out;
		}
		snprintf(what, sizeof(what), "--%s", *r);
		if (xp_cli_check_name(&x, what, xp_flag_get(flags, *r)->sval) < 0)
			goto out;
	}
	int admin = xp_flag_get(flags, "admin")->given,
	    boot = xp_flag_get(flags, "bootstrap")->given;
	const char *node = xp_flag_get(flags, "node")->sval;
	if (admin + boot + (node != NULL) > 1) {
		xp_cli_errorf(&x, 2, "--admin, --bootstrap and --node: give one of them");
		goto out;
	}
	const char *scope = admin ? "admin" : boot ? "bootstrap" : node ? "node" : "tenant";
	body = json_pack("{s:s, s:s, s:s}", "tenant", xp_flag_get(flags, "tenant")->sval, "name",
			 xp_flag_get(flags, "name")->sval, "scope", scope);
	if (node)
		json_object_set_new(body, "node", json_string(node));
	status = 1;
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	if (xp_cli_call(&x, "POST", "/v1/tokens", body, &reply) < 0) {
		xp_cli_fail_api(&x);
		goto out;
	}
	const char *secret = xp_cli_jstr(reply, "token");
	if (x.json) {
		xp_cli_print_json(reply);
	} else if (!secret) {
		xp_cli_errorf(&x, 1, "the controller's reply holds no token");
		goto out;
	} else {
		char *id = xp_cli_jtext(json_object_get(reply, "id"));
		printf("token %s created for tenant %s (%s, scope %s%s%s); its secret, shown only "
		       "now:\n%s\n",
		       id ? id : "?", xp_flag_get(flags, "tenant")->sval,
		       xp_flag_get(flags, "name")->sval, scope, node ? " " : "", node ? node : "",
		       secret);
		free(id);
	}
	status = 0;
out:
	json_decref(body);
	json_decref(reply);
	return xp_cli_end(&x, status);
}

static int token_revoke(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"token revoke",
		"xpool token revoke ID",
		"Revoke an API token: it stops working at once (admin).",
		"ID",
		1,
		1,
	};
	return xp_cli_delete_named(argc, argv, &verb, "/v1/tokens/", "token ID", 1);
}

int xp_verb_token(int argc, char **argv)
{
	static const struct xp_cli_sub subs[] = {
		{ "create", token_create, "create an API token (admin)" },
		{ "revoke", token_revoke, "revoke an API token (admin)" },
		{ NULL, NULL, NULL },
	};
	return xp_cli_dispatch("token", subs, argc, argv);
}
