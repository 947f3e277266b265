#define _GNU_SOURCE /* nftw */
/* testutil: helpers shared by the cmocka test binaries (see testutil.h). */
#include "testutil.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <ftw.h>
#include <sqlite3.h>
#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int xp_test_skipped;

int xp_test_exit(int failed)
{
	if (failed)
		return 1;
	if (xp_test_skipped) {
		fprintf(stderr, "SKIP: %d test(s) skipped, none failed: reported as skipped\n",
			xp_test_skipped);
		return 77;
	}
	return 0;
}

const char *xp_test_shared(const char *rel)
{
	static char path[4][4096];
	static int slot;
	const char *base = getenv("XP_SHARED_DIR");
#ifdef XP_SHARED_DIR
	if (!base)
		base = XP_SHARED_DIR;
#endif
	if (!base)
		base = "../shared";
	char *p = path[slot++ & 3];
	snprintf(p, sizeof(path[0]), "%s/%s", base, rel);
	if (access(p, R_OK) != 0) {
		fprintf(stderr, "SKIP: %s is absent (set XP_SHARED_DIR to the shared folder)\n", p);
		return NULL;
	}
	return p;
}

char *xp_test_tmpfile(const char *suffix, const char *text)
{
	char tmpl[] = "/tmp/xptestXXXXXX";
	int fd = mkstemp(tmpl);
	if (fd < 0)
		return NULL;
	close(fd);
	unlink(tmpl);
	char *path = malloc(strlen(tmpl) + strlen(suffix) + 1);
	strcpy(path, tmpl);
	strcat(path, suffix);
	FILE *f = fopen(path, "w");
	if (!f) {
		free(path);
		return NULL;
	}
	fputs(text, f);
	fclose(f);
	return path;
}

static size_t http_sink(char *p, size_t sz, size_t n, void *ud)
{
	struct {
		char *s;
		size_t len, cap;
	} *b = ud;
	if (b->len + sz * n + 1 > b->cap) {
		b->cap = (b->len + sz * n + 1) * 2;
		b->s = realloc(b->s, b->cap);
		assert_non_null(b->s);
	}
	memcpy(b->s + b->len, p, sz * n);
	b->len += sz * n;
	b->s[b->len] = 0;
	return sz * n;
}

char *xp_test_http(const char *addr, const char *token, const char *method, const char *path,
		   const char *body, long *status)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	struct {
		char *s;
		size_t len, cap;
	} b = { calloc(1, 1), 0, 1 };
	char url[1024], auth[256];
	long st = 0;
	snprintf(url, sizeof(url), "http://%s%s", addr, path);
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		hdr = curl_slist_append(hdr, auth);
	}
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	assert_int_equal(curl_easy_perform(h), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	if (status)
		*status = st;
	return b.s;
}

json_t *xp_test_json(const char *addr, const char *token, const char *method, const char *path,
		     const char *body, long *status)
{
	json_error_t je;
	char *text = xp_test_http(addr, token, method, path, body, status);
	json_t *o = json_loads(*text ? text : "null", JSON_DECODE_ANY, &je);
	free(text);
	return o;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

void xp_test_rmdir(const char *dir)
{
	struct stat st;
	if (lstat(dir, &st) != 0 && errno == ENOENT)
		return; /* as rm -rf: nothing to remove */
	assert_int_equal(nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

void xp_test_sql(const char *path, const char *text)
{
	sqlite3 *db;
	char *msg = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_exec(db, text, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", text, msg);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

json_t *xp_test_api(const char *addr, const char *token, const char *method, const char *path,
		    const char *body, long *status)
{
	json_error_t je;
	char *text = xp_test_http(addr, token, method, path, body, status);
	json_t *o = json_loads(text, JSON_DECODE_ANY, &je);
	if (!o) /* text (logs) */
		o = json_string(text);
	free(text);
	return o;
}

long long xp_test_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int xp_test_dial(const char *src, int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	inet_pton(AF_INET, src, &a.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	a.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

void xp_test_say(int fd, const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(buf));
	assert_int_equal(send(fd, buf, (size_t)n, MSG_NOSIGNAL), n);
}
