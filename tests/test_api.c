/*
 * test_api: the HTTP API as a table (tests/api/cases.jsonl), run in order
 * against a real controller on loopback (started in this process on a
 * fresh data directory, with the emulated nodes of
 * examples/clusters/small.yaml).
 *
 * A case is one request and what must come back: "as" (admin, none, bad,
 * or a saved token), "method", "path", a JSON "body" or raw "text" with a
 * "content_type", extra "headers", "big" (a body of N bytes), the "status",
 * and "expect" - a subset of the reply: every key given must match, arrays
 * element by element, "*" means present. "count" checks array lengths,
 * "wait_for" polls until a subset matches (up to 5 s), "save" keeps reply
 * fields (dotted paths) as ${VARS} for later cases.
 */
#include "testutil.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/strbuf.h"
#include "lib/xalloc.h"
#include "server/ctl.h"

#define MAXVARS 32

struct vars {
	char *name[MAXVARS], *val[MAXVARS];
	int n;
};

static char *subst(const struct vars *v, const char *s)
{
	struct xp_sb sb;
	xp_sb_init(&sb);
	while (*s) {
		if (s[0] == '$' && s[1] == '{') {
			const char *e = strchr(s, '}');
			int found = 0;
			for (int i = 0; e && i < v->n; i++)
				if (strlen(v->name[i]) == (size_t)(e - s - 2) &&
				    !strncmp(v->name[i], s + 2, (size_t)(e - s - 2))) {
					xp_sb_puts(&sb, v->val[i]);
					found = 1;
				}
			if (!found)
				fail_msg("unknown variable in '%s'", s);
			s = e + 1;
			continue;
		}
		xp_sb_putc(&sb, *s++);
	}
	return xp_sb_steal(&sb);
}

static json_t *subst_json(const struct vars *v, json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	char *t2 = subst(v, text);
	json_error_t e;
	json_t *r = json_loads(t2, JSON_DECODE_ANY, &e);
	free(text);
	free(t2);
	return r;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	xp_sb_putn(ud, p, sz * n);
	return sz * n;
}

static long request(const char *base, const char *token, const char *method, const char *path,
		    const char *ctype, const char *body, size_t len, json_t *headers, char **out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	struct xp_sb sb;
	char url[1024], buf[512];
	long status = 0;

	xp_sb_init(&sb);
	snprintf(url, sizeof(url), "%s%s", base, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &sb);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (token) {
		snprintf(buf, sizeof(buf), "Authorization: Bearer %s", token);
		h = curl_slist_append(h, buf);
	}
	if (ctype) {
		snprintf(buf, sizeof(buf), "Content-Type: %s", ctype);
		h = curl_slist_append(h, buf);
	}
	size_t i;
	json_t *hv;
	json_array_foreach(headers, i, hv) h = curl_slist_append(h, json_string_value(hv));
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	*out = xp_sb_steal(&sb);
	return status;
}

/* does actual contain expect? */
static int subset(json_t *expect, json_t *actual, char *why, size_t wl, const char *at)
{
	if (json_is_string(expect) && !strcmp(json_string_value(expect), "*")) {
		if (!actual || json_is_null(actual))
			return snprintf(why, wl, "%s: absent", at), 0;
		return 1;
	}
	if (json_is_object(expect)) {
		const char *k;
		json_t *v;
		if (!json_is_object(actual))
			return snprintf(why, wl, "%s: not an object", at), 0;
		json_object_foreach(expect, k, v)
		{
			char path[256];
			snprintf(path, sizeof(path), "%s.%s", at, k);
			if (!subset(v, json_object_get(actual, k), why, wl, path))
				return 0;
		}
		return 1;
	}
	if (json_is_array(expect)) {
		size_t i;
		json_t *v;
		if (!json_is_array(actual) || json_array_size(actual) < json_array_size(expect))
			return snprintf(why, wl, "%s: not an array of %zu", at,
					json_array_size(expect)),
			       0;
		json_array_foreach(expect, i, v)
		{
			char path[256];
			snprintf(path, sizeof(path), "%s[%zu]", at, i);
			if (!subset(v, json_array_get(actual, i), why, wl, path))
				return 0;
		}
		return 1;
	}
	if (json_is_string(expect) && json_is_integer(actual)) { /* a substituted id */
		char num[32];
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(actual));
		if (!strcmp(num, json_string_value(expect)))
			return 1;
	}
	if (!json_equal(expect, actual)) {
		char *a = actual ? json_dumps(actual, JSON_ENCODE_ANY) : strdup("(absent)");
		char *e = json_dumps(expect, JSON_ENCODE_ANY);
		snprintf(why, wl, "%s: %s, expected %s", at, a, e);
		free(a);
		free(e);
		return 0;
	}
	return 1;
}

static json_t *dig(json_t *o, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *tok = strtok(buf, "."); tok && o; tok = strtok(NULL, "."))
		o = json_is_array(o) ? json_array_get(o, (size_t)atoi(tok))
				     : json_object_get(o, tok);
	return o;
}

static void test_api_table(void **state)
{
	char dir[] = "/tmp/xpapiXXXXXX", cluster[4096], base[128], line[65536];
	struct xp_ctl_opts o = { 0 };
	struct xp_ctl *ctl;
	struct xp_err err = { 0 };
	struct vars v = { 0 };
	int ncases = 0;

	assert_non_null(mkdtemp(dir));
	snprintf(cluster, sizeof(cluster), "%s/examples/clusters/small.yaml", XP_SOURCE_DIR);
	o.data = dir;
	o.listen = "127.0.0.1:0";
	o.cluster = cluster;
	o.sync = 1;
	o.body_limit = 1 << 20;
	if (xp_ctl_start(&o, &ctl, &err) < 0)
		fail_msg("start: %s", err.text);
	snprintf(base, sizeof(base), "http://%s", ctl->addr);

	char path[4096];
	snprintf(path, sizeof(path), "%s/tests/api/cases.jsonl", XP_SOURCE_DIR);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		json_error_t je;
		json_t *c = json_loads(line, 0, &je);
		if (!c)
			fail_msg("cases.jsonl:%d: %s", ncases + 1, je.text);
		ncases++;
		const char *name = json_string_value(json_object_get(c, "name"));
		const char *as = json_string_value(json_object_get(c, "as"));
		char *as2 = subst(&v, as);
		const char *token = !strcmp(as2, "admin")  ? ctl->admin_token
				    : !strcmp(as2, "none") ? NULL
				    : !strcmp(as2, "bad")  ? "xpt_wrong"
							   : as2;
		char *p = subst(&v, json_string_value(json_object_get(c, "path")));
		const char *method = json_string_value(json_object_get(c, "method"));
		const char *ctype = json_string_value(json_object_get(c, "content_type"));
		char *body = NULL;
		size_t len = 0;
		json_t *jb = json_object_get(c, "body");
		if (jb) {
			json_t *b2 = subst_json(&v, jb);
			body = json_dumps(b2, JSON_COMPACT);
			json_decref(b2);
			if (!ctype)
				ctype = "application/json";
		} else if (json_object_get(c, "text")) {
			body = subst(&v, json_string_value(json_object_get(c, "text")));
		} else if (json_object_get(c, "big")) {
			len = (size_t)json_integer_value(json_object_get(c, "big"));
			body = xmalloc(len + 1);
			memset(body, ' ', len);
			body[0] = '{';
			body[len] = '\0';
		}
		if (body && !len)
			len = strlen(body);
		long want = (long)json_integer_value(json_object_get(c, "status"));
		json_t *wait = json_object_get(c, "wait_for");
		char *reply = NULL, why[512] = "";
		long got = 0;
		for (int tries = 0; tries < 100; tries++) {
			free(reply);
			got = request(base, token, method, p, ctype, body, len,
				      json_object_get(c, "headers"), &reply);
			if (!wait)
				break;
			json_t *r = json_loads(reply, 0, &je);
			int ok = r && subset(wait, r, why, sizeof(why), "");
			json_decref(r);
			if (ok)
				break;
			usleep(50000);
		}
		if (got != want)
			fail_msg("case %d '%s': status %ld, expected %ld: %s", ncases, name, got,
				 want, reply);
		json_t *r = json_loads(reply, 0, &je);
		json_t *ex = json_object_get(c, "expect");
		if (ex) {
			json_t *ex2 = subst_json(&v, ex);
			if (!r || !subset(ex2, r, why, sizeof(why), ""))
				fail_msg("case %d '%s': %s\nreply: %s", ncases, name, why, reply);
			json_decref(ex2);
		}
		const char *k;
		json_t *val;
		json_object_foreach(json_object_get(c, "count"), k, val)
		{
			size_t n = json_array_size(json_object_get(r, k));
			if (n != (size_t)json_integer_value(val))
				fail_msg("case %d '%s': %zu %s, expected %lld", ncases, name, n, k,
					 (long long)json_integer_value(val));
		}
		json_object_foreach(json_object_get(c, "save"), k, val)
		{
			json_t *x = dig(r, json_string_value(val));
			assert_non_null(x);
			assert_true(v.n < MAXVARS);
			v.name[v.n] = xstrdup(k);
			v.val[v.n++] = json_is_string(x) ? xstrdup(json_string_value(x))
							 : json_dumps(x, JSON_ENCODE_ANY);
		}
		json_decref(r);
		free(reply);
		free(body);
		free(p);
		free(as2);
		json_decref(c);
	}
	fclose(f);
	print_message("  %d API cases passed\n", ncases);
	assert_true(ncases >= 60);
	xp_ctl_stop(ctl);
	for (int i = 0; i < v.n; i++) {
		free(v.name[i]);
		free(v.val[i]);
	}
	xp_test_rmdir(dir);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_api_table),
	};
	int rc = xp_run_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
