/*
 * verb_plumbing: the plumbing every client verb shares (see cli.h): argument
 * splitting, --help and -o, connecting, calling the controller, following
 * list pages, reporting errors, and reading replies into table cells.
 *
 * Positional arguments may sit between flags ("xpool job 17 -o json"):
 * xp_cli_start() walks argv with the verb's flag table, so it knows which
 * words are flag values, and hands only the flags to xp_flags_parse().
 * "--" ends the flags; submit keeps what follows as the command.
 *
 * Exit statuses: 2 for anything wrong with the command line (found before
 * a request is sent), 1 for what the controller or the network answered.
 */
#define _GNU_SOURCE
#include "cli.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "../client/client.h"
#include "../lib/parse.h"
#include "../lib/strbuf.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"
#include "flags.h"
#include "table.h"

/* The flag a word names, if the table has it ("--name", "--name=v", "-o"). */
static struct xp_flag *lookup(struct xp_flag *flags, const char *a, int *has_value)
{
	*has_value = 0;
	if (a[1] != '-') {
		if (a[2] != '\0')
			return NULL;
		for (struct xp_flag *f = flags; f->name; f++)
			if (f->short_name == a[1])
				return f;
		return NULL;
	}
	const char *name = a + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	*has_value = eq != NULL;
	for (struct xp_flag *f = flags; f->name; f++)
		if (strlen(f->name) == len && strncmp(f->name, name, len) == 0)
			return f;
	return NULL;
}

int xp_cli_start(struct xp_cli *x, const struct xp_cli_verb *v, struct xp_flag *flags, int argc,
		 char **argv)
{
	char **fargv = XNEWV(char *, (size_t)argc + 1);
	int nf = 0, help, dashdash = 0, json = 0;

	memset(x, 0, sizeof(*x));
	x->v = v;
	x->flags = flags;
	x->args = XNEWV(char *, (size_t)argc + 1);
	x->rest = XNEWV(char *, (size_t)argc + 1);
	xp_flag_get(flags, "output")->sval = (char *)"table";
	for (int i = 0; i < argc; i++) {
		char *a = argv[i];
		if (dashdash) {
			if (v->rest)
				x->rest[x->nrest++] = a;
			else
				x->args[x->nargs++] = a;
		} else if (strcmp(a, "--") == 0) {
			dashdash = 1;
		} else if (a[0] == '-' && a[1] != '\0') {
			int has_value;
			struct xp_flag *f = lookup(flags, a, &has_value);
			fargv[nf++] = a;
			if (f && f->kind == XP_FLAG_STR && !has_value && i + 1 < argc)
				fargv[nf++] = argv[++i];
		} else {
			x->args[x->nargs++] = a;
		}
	}
	int rc = xp_flags_parse(flags, nf, fargv, &help, &x->err);
	free(fargv);
	if (rc < 0) {
		x->status = xp_cli_fail(v->verb, &x->err, 2);
		return 1;
	}
	if (help) {
		xp_flags_usage(stdout, v->synopsis, v->about, flags);
		x->status = 0;
		return 1;
	}
	static const char *const outputs[] = { "table", "json", NULL };
	if (xp_flag_choice(flags, "output", outputs, &json, &x->err) < 0) {
		x->status = xp_cli_fail(v->verb, &x->err, 2);
		return 1;
	}
	x->json = json;
	if (x->nargs < v->min_args) {
		x->status = xp_cli_errorf(x, 2, "missing %s (usage: %s)", v->args ? v->args : "",
					  v->synopsis);
		return 1;
	}
	if (v->max_args >= 0 && x->nargs > v->max_args) {
		x->status = xp_cli_errorf(
			x, 2, "unexpected argument '%s' (%s%s)", x->args[v->max_args],
			v->rest ? "a command goes after --; usage: " : "usage: ", v->synopsis);
		return 1;
	}
	return 0;
}

int xp_cli_connect(struct xp_cli *x)
{
	struct xp_client_config cfg;
	if (x->client)
		return 0; /* connected already */
	struct xp_flag *fa = xp_flag_get(x->flags, "addr"), *ft = xp_flag_get(x->flags, "token");
	/* a bad --addr is bad usage, whatever else is missing */
	char *url = NULL;
	if (fa->given && xp_client_normalise_addr(fa->sval, &url, &x->err) < 0) {
		xp_err_prefix(&x->err, "--addr: ");
		x->status = xp_cli_fail(x->v->verb, &x->err, 2);
		return -1;
	}
	free(url);
	url = NULL;
	struct xp_flag *fc = xp_flag_get(x->flags, "ca");
	if (xp_client_config_resolve_ca(fa->given ? fa->sval : NULL, ft->given ? ft->sval : NULL,
					fc->given ? fc->sval : NULL, &cfg, &x->err) < 0) {
		x->status = xp_cli_fail(x->v->verb, &x->err, 1);
		return -1;
	}
	/* a bad --token is a usage error; from elsewhere, say where */
	const char *from = cfg.addr_from;
	if (xp_client_normalise_addr(cfg.addr, &url, &x->err) == 0) {
		from = cfg.token_from;
		x->client = xp_client_create(cfg.addr, cfg.token, &x->err);
		if (x->client && xp_client_set_ca(x->client, cfg.ca, &x->err) < 0) {
			from = cfg.ca_from;
			xp_client_destroy(x->client);
			x->client = NULL;
		}
	}
	free(url);
	if (!x->client) {
		int usage = from[0] == '-';
		xp_err_prefix(&x->err, "%s: ", from);
		x->status = xp_cli_fail(x->v->verb, &x->err, usage ? 2 : 1);
		xp_client_config_free(&cfg);
		return -1;
	}
	x->token_from = xstrdup(cfg.token_from);
	xp_client_config_free(&cfg);
	return 0;
}

int xp_cli_end(struct xp_cli *x, int status)
{
	xp_client_destroy(x->client);
	x->client = NULL;
	free(x->args);
	free(x->rest);
	free(x->token_from);
	x->args = x->rest = NULL;
	x->token_from = NULL;
	if (x->flags)
		xp_flags_free(x->flags);
	x->flags = NULL;
	return status;
}

int xp_cli_errorf(struct xp_cli *x, int status, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "xpool %s: ", x->v->verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return status;
}

int xp_cli_fail_api(struct xp_cli *x)
{
	const char *text = x->err.text[0] ? x->err.text : xp_strerror(x->err.code);
	if (x->err.code == XP_EAUTH)
		return xp_cli_errorf(x, 1, "%s (the token from %s was refused)", text,
				     x->token_from ? x->token_from : "the command line");
	return xp_cli_errorf(x, 1, "%s", text);
}

int xp_cli_call(struct xp_cli *x, const char *method, const char *path, json_t *body,
		json_t **reply)
{
	return xp_client_json(x->client, method, path, body, reply, &x->err) < 0 ? -1 : 0;
}

#define MAX_PAGES 100000

int xp_cli_list(struct xp_cli *x, const char *path, const char *key, int all, json_t **reply)
{
	json_t *first = NULL, *page = NULL;
	char *after = NULL;
	int rc = -1;

	if (xp_cli_call(x, "GET", path, NULL, &first) < 0)
		return -1;
	if (!json_is_array(json_object_get(first, key))) {
		xp_errf(&x->err, XP_EIO, "the controller's reply to GET %s has no \"%s\" list",
			path, key);
		goto out;
	}
	for (int pages = 1; all; pages++) {
		char *next = xp_cli_jtext(json_object_get(page ? page : first, "next"));
		struct xp_sb p = { 0 };
		if (!next) {
			rc = 0;
			goto out;
		}
		if ((after && strcmp(after, next) == 0) || pages >= MAX_PAGES) {
			xp_errf(&x->err, XP_EIO, "the controller's list %s does not end (next %s)",
				path, next);
			free(next);
			goto out;
		}
		free(after);
		after = next;
		xp_sb_puts(&p, path);
		xp_client_query(&p, "after", after);
		json_decref(page);
		page = NULL;
		int crc = xp_cli_call(x, "GET", p.s, NULL, &page);
		xp_sb_free(&p);
		if (crc < 0)
			goto out;
		json_t *items = json_object_get(page, key);
		if (!json_is_array(items)) {
			xp_errf(&x->err, XP_EIO, "a page of GET %s has no \"%s\" list", path, key);
			goto out;
		}
		json_array_extend(json_object_get(first, key), items);
		json_object_set(first, "next", json_object_get(page, "next"));
	}
	rc = 0;
out:
	free(after);
	json_decref(page);
	if (rc < 0)
		json_decref(first);
	else
		*reply = first;
	return rc;
}

void xp_cli_print_json(const json_t *v)
{
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
	if (s) {
		puts(s);
		free(s);
	}
}

int xp_cli_parse_id(struct xp_cli *x, const char *what, const char *s, long long *id)
{
	int64_t v;
	if (xp_parse_i64(s, 1, INT64_MAX, &v) < 0) {
		xp_cli_errorf(x, 2, "%s: expected a positive integer, got '%s'", what, s);
		return -1;
	}
	*id = (long long)v;
	return 0;
}

int xp_cli_valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 63 || !isalnum((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return 0;
	return 1;
}

int xp_cli_check_name(struct xp_cli *x, const char *what, const char *s)
{
	if (xp_cli_valid_name(s))
		return 0;
	xp_cli_errorf(x, 2,
		      "%s: expected 1-63 characters of A-Z a-z 0-9 . _ - starting with a letter "
		      "or digit, got '%s'",
		      what, s);
	return -1;
}

const char *xp_cli_jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

int xp_cli_jint(const json_t *o, const char *key, long long *v)
{
	json_t *j = json_object_get(o, key);
	if (json_is_integer(j)) {
		*v = (long long)json_integer_value(j);
		return 0;
	}
	if (json_is_real(j)) {
		*v = (long long)json_real_value(j);
		return 0;
	}
	return -1;
}

char *xp_cli_jtext(const json_t *v)
{
	char buf[64];
	if (!v)
		return NULL;
	switch (json_typeof(v)) {
	case JSON_STRING:
		return xstrdup(json_string_value(v));
	case JSON_INTEGER:
		snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
		return xstrdup(buf);
	case JSON_REAL:
		snprintf(buf, sizeof(buf), "%g", json_real_value(v));
		return xstrdup(buf);
	case JSON_TRUE:
		return xstrdup("true");
	case JSON_FALSE:
		return xstrdup("false");
	case JSON_OBJECT:
	case JSON_ARRAY:
		return json_dumps(v, JSON_COMPACT);
	default:
		return NULL;
	}
}

void xp_cli_cell_str(struct xp_table *t, const json_t *o, const char *key)
{
	char *s = xp_cli_jtext(json_object_get(o, key));
	xp_table_add(t, s);
	free(s);
}

void xp_cli_cell_int(struct xp_table *t, const json_t *o, const char *key)
{
	long long v;
	if (xp_cli_jint(o, key, &v) < 0)
		xp_table_add(t, NULL);
	else
		xp_table_addf(t, "%lld", v);
}

void xp_cli_cell_cpu(struct xp_table *t, const json_t *o, const char *key)
{
	char u[XP_UNIT_LEN];
	long long v;
	if (xp_cli_jint(o, key, &v) < 0) {
		xp_table_add(t, NULL);
		return;
	}
	xp_fmt_cpu(v, u);
	xp_table_add(t, u);
}

void xp_cli_cell_mib(struct xp_table *t, const json_t *o, const char *key)
{
	char u[XP_UNIT_LEN];
	long long v;
	if (xp_cli_jint(o, key, &v) < 0) {
		xp_table_add(t, NULL);
		return;
	}
	xp_fmt_mib(v, u);
	xp_table_add(t, u);
}

void xp_cli_cell_age(struct xp_table *t, const json_t *o, const char *key)
{
	const char *s = xp_cli_jstr(o, key);
	char u[XP_UNIT_LEN];
	int64_t ms;
	if (!s || xp_time_parse(s, &ms) < 0) {
		xp_table_add(t, NULL);
		return;
	}
	xp_fmt_age(xp_cli_now_ms() - ms, u);
	xp_table_add(t, u);
}

int xp_cli_get_verb(int argc, char **argv, const struct xp_cli_verb *verb, struct xp_flag *flags,
		    const char *path, const char *const *query, void (*print)(const json_t *))
{
	struct xp_cli x;
	struct xp_sb p = { 0 };
	int status;
	if (xp_cli_start(&x, verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	xp_sb_puts(&p, path);
	if (query)
		xp_cli_query_flags(&p, flags, query);
	status = xp_cli_call_print(&x, "GET", p.s, print);
	xp_sb_free(&p);
	return xp_cli_end(&x, status);
}

int xp_cli_call_print(struct xp_cli *x, const char *method, const char *path,
		      void (*print)(const json_t *))
{
	json_t *reply = NULL;
	int status = 0;
	if (xp_cli_connect(x) < 0)
		return x->status;
	if (xp_cli_call(x, method, path, NULL, &reply) < 0)
		status = xp_cli_fail_api(x);
	else if (x->json)
		xp_cli_print_json(reply);
	else
		print(reply);
	json_decref(reply);
	return status;
}

void xp_cli_query_flags(struct xp_sb *path, struct xp_flag *flags, const char *const *names)
{
	for (const char *const *f = names; *f; f++)
		if (xp_flag_get(flags, *f)->given)
			xp_client_query(path, *f, xp_flag_get(flags, *f)->sval);
}

long long xp_cli_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
