/*
 * test_client: the C client of the API (src/client) and the CLI's client
 * verbs, without a controller.
 *
 * - config: resolution order (flag, environment, file, default) and every
 *   file error naming file:line, with HOME pointed at a temporary folder;
 * - addresses: what each accepted form normalises to, what is refused;
 * - API errors: a table of (status, body) -> (code, text);
 * - server-sent events: the parser fed whole and one byte at a time;
 * - transport: a closed port gives "cannot reach the controller at ...";
 *   a canned HTTP peer in a thread checks what goes on the wire (method,
 *   path, headers, body), keep-alive, error replies and Last-Event-ID;
 * - tables and units (src/cli/table.c, compiled in here: the CLI is an
 *   executable, not a library);
 * - flags -> JSON spec: `xpool submit --dry-run` compared as JSON with the
 *   spec docs/api.md describes, and bad flags exiting 2 naming the flag.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "client/client.h"
#include "cli/table.c"

/* ---- helpers ---- */

static char home[256];

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void rm_rf(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* A fresh HOME with an empty ~/.config/xpool, no XPOOL_* in the environment. */
static int setup_home(void **state)
{
	char dir[300];
	snprintf(home, sizeof(home), "/tmp/xptest-home-XXXXXX");
	if (!mkdtemp(home))
		return -1;
	snprintf(dir, sizeof(dir), "%s/.config", home);
	mkdir(dir, 0700);
	snprintf(dir, sizeof(dir), "%s/.config/xpool", home);
	mkdir(dir, 0700);
	setenv("HOME", home, 1);
	unsetenv("XPOOL_ADDR");
	unsetenv("XPOOL_TOKEN");
	return 0;
}

static int teardown_home(void **state)
{
	rm_rf(home);
	return 0;
}

static void config_file(const char *text)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/.config/xpool/config", home);
	write_text(path, text);
}

/* ---- config ---- */

static void test_config_defaults(void **state)
{
	struct xp_client_config c;
	struct xp_err err = { 0 };

	/* no token anywhere: EAUTH telling every way to set one */
	assert_int_equal(xp_client_config_resolve(NULL, NULL, &c, &err), XP_EAUTH);
	assert_non_null(strstr(err.text, "--token"));
	assert_non_null(strstr(err.text, "XPOOL_TOKEN"));
	assert_non_null(strstr(err.text, ".config/xpool/config"));
	assert_non_null(strstr(err.text, "token_file"));

	assert_int_equal(xp_client_config_resolve(NULL, "t0k", &c, &err), 0);
	assert_string_equal(c.addr, XP_CLIENT_DEFAULT_ADDR);
	assert_string_equal(c.addr_from, "default");
	assert_string_equal(c.token, "t0k");
	assert_string_equal(c.token_from, "--token");
	xp_client_config_free(&c);
}

static void test_config_order(void **state)
{
	struct xp_client_config c;
	struct xp_err err = { 0 };

	config_file("# the dev controller\n"
		    "\n"
		    "addr: file-host:1\n"
		    "   token: \"file-token\"   # quoted, with a comment\n");
	assert_int_equal(xp_client_config_resolve(NULL, NULL, &c, &err), 0);
	assert_string_equal(c.addr, "file-host:1");
	assert_string_equal(c.token, "file-token");
	assert_non_null(strstr(c.addr_from, "config:3"));
	assert_non_null(strstr(c.token_from, "config:4"));
	xp_client_config_free(&c);

	/* the environment beats the file */
	setenv("XPOOL_ADDR", "env-host:2", 1);
	setenv("XPOOL_TOKEN", "env-token", 1);
	assert_int_equal(xp_client_config_resolve(NULL, NULL, &c, &err), 0);
	assert_string_equal(c.addr, "env-host:2");
	assert_string_equal(c.token, "env-token");
	assert_string_equal(c.token_from, "XPOOL_TOKEN");
	xp_client_config_free(&c);

	/* flags beat the environment; each value on its own */
	assert_int_equal(xp_client_config_resolve("flag-host:3", NULL, &c, &err), 0);
	assert_string_equal(c.addr, "flag-host:3");
	assert_string_equal(c.token, "env-token");
	xp_client_config_free(&c);
	unsetenv("XPOOL_TOKEN");
	assert_int_equal(xp_client_config_resolve("flag-host:3", "flag-token", &c, &err), 0);
	assert_string_equal(c.token, "flag-token");
	xp_client_config_free(&c);
	/* an empty variable counts as unset */
	setenv("XPOOL_TOKEN", "", 1);
	assert_int_equal(xp_client_config_resolve(NULL, NULL, &c, &err), 0);
	assert_string_equal(c.token, "file-token");
	xp_client_config_free(&c);
	unsetenv("XPOOL_ADDR");
	unsetenv("XPOOL_TOKEN");
}

static void test_config_token_file(void **state)
{
	struct xp_client_config c;
	struct xp_err err = { 0 };
	char path[300];

	/* relative to the config file's folder; first line, blanks dropped */
	snprintf(path, sizeof(path), "%s/.config/xpool/admin.token", home);
	write_text(path, "  xpt_secret \nsecond line ignored\n");
	config_file("token_file: admin.token\n");
	assert_int_equal(xp_client_config_resolve(NULL, NULL, &c, &err), 0);
	assert_string_equal(c.token, "xpt_secret");
	xp_client_config_free(&c);

	/* "~/" is HOME; an absolute path is used as it is */
	snprintf(path, sizeof(path), "%s/data.token", home);
	write_text(path, "xpt_home\n");
	config_file("token_file: ~/data.token\n");
	assert_int_equal(xp_client_config_resolve(NULL, NULL, &c, &err), 0);
	assert_string_equal(c.token, "xpt_home");
	xp_client_config_free(&c);
	char text[400];
	snprintf(text, sizeof(text), "token_file: %s\n", path);
	config_file(text);
	assert_int_equal(xp_client_config_resolve(NULL, NULL, &c, &err), 0);
	assert_string_equal(c.token, "xpt_home");
	xp_client_config_free(&c);

	/* a missing or empty token file names the config line and the file */
	config_file("addr: h:1\ntoken_file: nope.token\n");
	assert_true(xp_client_config_resolve(NULL, NULL, &c, &err) < 0);
	assert_non_null(strstr(err.text, "config:2: token_file:"));
	assert_non_null(strstr(err.text, "nope.token"));
	write_text(path, "\n\n");
	config_file(text);
	assert_int_equal(xp_client_config_resolve(NULL, NULL, &c, &err), XP_EINVAL);
	assert_non_null(strstr(err.text, "is empty"));

	/* the token file is not read when the token comes from elsewhere */
	config_file("token_file: nope.token\n");
	assert_int_equal(xp_client_config_resolve(NULL, "flag", &c, &err), 0);
	xp_client_config_free(&c);
}

static void test_config_errors(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "addr: a:1\nadress: b:2\n", "config:2: unknown key 'adress'" },
		{ "# only a comment\naddr a:1\n", "config:2: expected 'key: value'" },
		{ "addr:\n", "config:1: addr: empty value" },
		{ "addr: a:1\naddr: b:2\n", "config:2: addr is set twice (first at" },
		{ "token: x\ntoken_file: y\n",
		  "config:2: token_file: the token is already set at" },
		{ "token_file: y\n\ntoken: x\n", "config:3: token: the token is already set at" },
	};
	struct xp_client_config c;
	struct xp_err err = { 0 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		config_file(cases[i].text);
		memset(&err, 0, sizeof(err));
		assert_int_equal(xp_client_config_resolve(NULL, NULL, &c, &err), XP_EINVAL);
		if (!strstr(err.text, cases[i].want))
			fail_msg("case %zu: got '%s', want '%s'", i, err.text, cases[i].want);
	}
	/* the file is not read when flags give everything */
	config_file("bogus line\n");
	assert_int_equal(xp_client_config_resolve("a:1", "t", &c, &err), 0);
	xp_client_config_free(&c);
	/* but it is when a value is missing */
	assert_true(xp_client_config_resolve("a:1", NULL, &c, &err) < 0);
	assert_non_null(strstr(err.text, "config:1:"));
	/* an unreadable config is an error, an absent one is not */
	char path[300];
	snprintf(path, sizeof(path), "%s/.config/xpool/config", home);
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0); /* a folder where the file goes */
	assert_true(xp_client_config_resolve(NULL, "t", &c, &err) < 0);
	rmdir(path);
	assert_int_equal(xp_client_config_resolve(NULL, "t", &c, &err), 0);
	xp_client_config_free(&c);
}

/* The CA of an https:// address (docs/design/tls.md): --ca, XPOOL_CA,
 * "ca:" in the file (relative to its folder); never looked for over
 * http://; a CA file that cannot be used is named with the reason. */
static void test_config_ca_tls(void **state)
{
	struct xp_client_config c;
	struct xp_err err = { 0 };
	char want[400], path[300];

	config_file("addr: https://h:1\ntoken: t\nca: certs/ca.pem\n");
	assert_int_equal(xp_client_config_resolve(NULL, NULL, &c, &err), 0);
	snprintf(want, sizeof(want), "%s/.config/xpool/certs/ca.pem", home);
	assert_string_equal(c.ca, want);
	assert_non_null(strstr(c.ca_from, "config:3"));
	xp_client_config_free(&c);
	setenv("XPOOL_CA", "/env/ca.pem", 1);
	assert_int_equal(xp_client_config_resolve(NULL, NULL, &c, &err), 0);
	assert_string_equal(c.ca, "/env/ca.pem");
	assert_string_equal(c.ca_from, "XPOOL_CA");
	xp_client_config_free(&c);
	assert_int_equal(xp_client_config_resolve_ca(NULL, NULL, "/flag/ca.pem", &c, &err), 0);
	assert_string_equal(c.ca, "/flag/ca.pem");
	assert_string_equal(c.ca_from, "--ca");
	xp_client_config_free(&c);
	unsetenv("XPOOL_CA");
	/* over http:// the file's CA is not used, nor the file read for it */
	config_file("addr: http://h:1\ntoken: t\nca: ~/ca.pem\n");
	assert_int_equal(xp_client_config_resolve(NULL, NULL, &c, &err), 0);
	assert_null(c.ca);
	xp_client_config_free(&c);
	config_file("bogus line\n");
	assert_int_equal(xp_client_config_resolve("http://h:1", "t", &c, &err), 0);
	xp_client_config_free(&c);
	/* an https:// address looks for it: the broken file is named */
	assert_int_equal(xp_client_config_resolve("https://h:1", "t", &c, &err), XP_EINVAL);
	assert_non_null(strstr(err.text, "config:1:"));

	/* the CA file itself: named with the reason; ignored for http:// */
	struct xp_client *cl = xp_client_create("https://127.0.0.1:1", "t", &err);
	assert_non_null(cl);
	snprintf(path, sizeof(path), "%s/nope.pem", home);
	assert_true(xp_client_set_ca(cl, path, &err) < 0);
	if (!strstr(err.text, path) || !strstr(err.text, "No such file"))
		fail_msg("missing CA file: got '%s'", err.text);
	snprintf(path, sizeof(path), "%s/junk.pem", home);
	write_text(path, "not a certificate\n");
	assert_int_equal(xp_client_set_ca(cl, path, &err), XP_EINVAL);
	if (!strstr(err.text, path) || !strstr(err.text, "no PEM certificate"))
		fail_msg("junk CA file: got '%s'", err.text);
	xp_client_destroy(cl);
	cl = xp_client_create("http://127.0.0.1:1", "t", &err);
	assert_int_equal(xp_client_set_ca(cl, path, &err), 0);
	xp_client_destroy(cl);
}

/* ---- addresses ---- */

static void test_addresses(void **state)
{
	static const struct {
		const char *in, *out;
	} ok[] = {
		{ "127.0.0.1:7700", "http://127.0.0.1:7700" },
		{ "localhost", "http://localhost:7700" },
		{ "ctl.example.com:80", "http://ctl.example.com:80" },
		{ "[::1]:9000", "http://[::1]:9000" },
		{ "[::1]", "http://[::1]:7700" },
		{ "http://h:1/", "http://h:1" },
		{ "HTTPS://h/xpool/", "HTTPS://h/xpool" },
		{ "h:8080/prefix", "http://h:8080/prefix" },
	};
	static const char *const bad[] = { "",	    "ftp://h", "h:0",	"h:65536", "h:x",     ":80",
					   "a b:1", "[::1",    "h:1?x", "http://", "h:123456" };
	struct xp_err err = { 0 };
	char *url;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (xp_client_normalise_addr(ok[i].in, &url, &err) < 0)
			fail_msg("'%s' refused: %s", ok[i].in, err.text);
		assert_string_equal(url, ok[i].out);
		free(url);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (xp_client_normalise_addr(bad[i], &url, &err) == 0)
			fail_msg("'%s' accepted as %s", bad[i], url);
		assert_int_equal(err.code, XP_EINVAL);
	}
	/* a token that cannot travel in a header is refused up front */
	assert_null(xp_client_create("h:1", "a b", &err));
	assert_null(xp_client_create("h:1", "", &err));
	struct xp_client *c = xp_client_create("h:1", NULL, &err);
	assert_non_null(c);
	assert_string_equal(xp_client_base(c), "http://h:1");
	xp_client_destroy(c);
	xp_client_destroy(NULL);
}

/* ---- API errors ---- */

static void test_decode_error(void **state)
{
	static const struct {
		long status;
		const char *body;
		int code;
		const char *text, *field;
	} cases[] = {
		{ 400,
		  "{\"error\": {\"code\": \"EINVAL\", \"message\": \"resources.devices.count: "
		  "expected an integer 0..64, got 99\", \"field\": \"resources.devices.count\"}}",
		  XP_EINVAL, "resources.devices.count: expected an integer 0..64, got 99",
		  "resources.devices.count" },
		{ 404, "{\"error\": {\"code\": \"ENOENT\", \"message\": \"job 17 not found\"}}",
		  XP_ENOENT, "job 17 not found", NULL },
		/* the name decides over the status; 409 has three codes */
		{ 409, "{\"error\": {\"code\": \"EEXIST\", \"message\": \"queue batch exists\"}}",
		  XP_EEXIST, "queue batch exists", NULL },
		{ 409, "{\"error\": {\"code\": \"ENOSPC\", \"message\": \"m\"}}", XP_ENOSPC, "m",
		  NULL },
		{ 401, "{\"error\": {\"code\": \"EAUTH\", \"message\": \"unknown token\"}}",
		  XP_EAUTH, "unknown token", NULL },
		{ 403, "{\"error\": {\"code\": \"EPERM\", \"message\": \"admin only\"}}", XP_EPERM,
		  "admin only", NULL },
		{ 413, "{\"error\": {\"code\": \"ETOOBIG\", \"message\": \"body over 1 MiB\"}}",
		  XP_ETOOBIG, "body over 1 MiB", NULL },
		{ 503, "{\"error\": {\"code\": \"EUNAVAIL\", \"message\": \"replaying\"}}",
		  XP_EUNAVAIL, "replaying", NULL },
		/* an unknown name: the status decides */
		{ 404, "{\"error\": {\"code\": \"ENOPE\", \"message\": \"gone\"}}", XP_ENOENT,
		  "gone", NULL },
		/* no message: the code's own text and the status */
		{ 409, "{\"error\": {\"code\": \"ESTATE\"}}", XP_ESTATE,
		  "illegal state transition (HTTP 409)", NULL },
		/* not our body at all */
		{ 502, "<html>Bad Gateway</html>\n<body>", XP_EUNAVAIL,
		  "HTTP 502: <html>Bad Gateway</html>", NULL },
		{ 500, "", XP_EINTERNAL, "HTTP 500: internal error", NULL },
		{ 418, "teapot", XP_EINVAL, "HTTP 418: teapot", NULL },
		{ 404, "[1, 2]", XP_ENOENT, "HTTP 404: [1, 2]", NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct xp_err err = { 0 };
		char *field = (char *)"unset";
		int rc = xp_client_decode_error(cases[i].status, cases[i].body,
						strlen(cases[i].body), &field, &err);
		if (rc != cases[i].code || err.code != cases[i].code ||
		    strcmp(err.text, cases[i].text) != 0)
			fail_msg("case %zu: got %s '%s'", i, xp_errname(rc), err.text);
		if (cases[i].field)
			assert_string_equal(field, cases[i].field);
		else
			assert_null(field);
		free(field);
	}
	assert_int_equal(xp_client_status_code(400), XP_EINVAL);
	assert_int_equal(xp_client_status_code(401), XP_EAUTH);
	assert_int_equal(xp_client_status_code(403), XP_EPERM);
	assert_int_equal(xp_client_status_code(404), XP_ENOENT);
	assert_int_equal(xp_client_status_code(413), XP_ETOOBIG);
	assert_int_equal(xp_client_status_code(503), XP_EUNAVAIL);
	assert_int_equal(xp_client_status_code(500), XP_EINTERNAL);
	assert_int_equal(xp_client_status_code(302), XP_EIO);
}

/* ---- paths ---- */

static void test_query(void **state)
{
	struct xp_sb b = { 0 };
	xp_sb_puts(&b, "/v1/jobs");
	xp_client_query(&b, "state", "pending,running");
	xp_client_query(&b, "name", "a b&c=d/é");
	assert_string_equal(b.s, "/v1/jobs?state=pending%2Crunning&name=a%20b%26c%3Dd%2F%C3%A9");
	xp_sb_reset(&b);
	xp_client_escape(&b, "node-1.x_y~");
	assert_string_equal(b.s, "node-1.x_y~");
	xp_sb_free(&b);
}

/* ---- server-sent events ---- */

struct seen {
	char log[2048];
	int n, stop_at;
};

static int record(void *ud, const struct xp_sse_event *ev)
{
	struct seen *s = ud;
	size_t off = strlen(s->log);
	snprintf(s->log + off, sizeof(s->log) - off, "[%s|%s|%.*s]", ev->id, ev->type,
		 (int)ev->data_len, ev->data);
	s->n++;
	return s->stop_at && s->n == s->stop_at ? 42 : 0;
}

static const char sse_text[] = ": a comment, then a keep-alive\n\n"
			       "id: 41\nevent: job.started\ndata: {\"seq\": 41}\n\n"
			       "data:no space\r\ndata:  two spaces\r\n\r\n" /* CRLF, id kept */
			       "event: x\r\r"				    /* no data: dropped */
			       "id: 43\ndata\nunknown: field\n\n"	    /* "data" alone: "" */
			       "id: 44\ndata: cut";			    /* unfinished */
static const char sse_want[] = "[41|job.started|{\"seq\": 41}]"
			       "[41|message|no space\n two spaces]"
			       "[43|message|]";

static void test_sse_parser(void **state)
{
	struct xp_sse_parser p;
	struct seen s = { "", 0, 0 };

	xp_sse_init(&p, record, &s);
	assert_int_equal(xp_sse_feed(&p, sse_text, strlen(sse_text)), 0);
	assert_string_equal(s.log, sse_want);
	xp_sse_free(&p);

	/* one byte at a time gives the same events */
	memset(&s, 0, sizeof(s));
	xp_sse_init(&p, record, &s);
	for (size_t i = 0; sse_text[i]; i++)
		assert_int_equal(xp_sse_feed(&p, sse_text + i, 1), 0);
	assert_string_equal(s.log, sse_want);
	xp_sse_free(&p);

	/* a non-zero return stops the feed */
	memset(&s, 0, sizeof(s));
	s.stop_at = 1;
	xp_sse_init(&p, record, &s);
	assert_int_equal(xp_sse_feed(&p, sse_text, strlen(sse_text)), 42);
	assert_int_equal(s.n, 1);
	xp_sse_free(&p);
}

/* ---- transport ---- */

/* A port nothing listens on: bind one, note it, close it. */
/* A loopback port nobody listens on: bound (so no other test's server can
 * take it meanwhile) but not listening, so a connect is refused. The
 * caller closes *fd when done. */
static int closed_port(int *fd)
{
	struct sockaddr_in a = { 0 };
	socklen_t al = sizeof(a);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &al), 0);
	return ntohs(a.sin_port);
}

static void test_cannot_reach(void **state)
{
	struct xp_err err = { 0 };
	char addr[64], want[128];
	int hold, port = closed_port(&hold);
	long status;
	char *resp = NULL;
	size_t len;
	json_t *reply;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	snprintf(want, sizeof(want), "cannot reach the controller at http://127.0.0.1:%d: ", port);
	struct xp_client *c = xp_client_create(addr, "t", &err);
	assert_non_null(c);
	assert_int_equal(
		xp_client_request(c, "GET", "/v1/jobs", NULL, NULL, 0, &status, &resp, &len, &err),
		XP_EUNAVAIL);
	assert_null(resp);
	if (strncmp(err.text, want, strlen(want)) != 0 || strlen(err.text) <= strlen(want))
		fail_msg("got '%s'", err.text);
	memset(&err, 0, sizeof(err));
	assert_int_equal(xp_client_json(c, "GET", "/v1/nodes", NULL, &reply, &err), XP_EUNAVAIL);
	assert_null(reply);
	assert_non_null(strstr(err.text, want));
	xp_client_destroy(c);

	/* https:// goes through the same transport, with TLS (GnuTLS, opened on first use) */
	snprintf(addr, sizeof(addr), "https://127.0.0.1:%d", port);
	snprintf(want, sizeof(want), "cannot reach the controller at https://127.0.0.1:%d: ", port);
	c = xp_client_create(addr, "t", &err);
	assert_non_null(c);
	assert_int_equal(xp_client_json(c, "GET", "/v1/nodes", NULL, &reply, &err), XP_EUNAVAIL);
	if (strncmp(err.text, want, strlen(want)) != 0)
		fail_msg("https: got '%s'", err.text);
	xp_client_destroy(c);
	close(hold);
}

/* A canned HTTP peer: answers each request with the next scripted reply,
 * recording the requests and counting connections. */
#define FAKE_MAX 12
struct fake {
	int lfd, port;
	const char *replies[FAKE_MAX];
	int nreplies;
	char req[FAKE_MAX][8192];
	int nreq, accepts;
	pthread_t th;
};

/* Read one request (headers and a Content-Length body) into buf; 0 at EOF. */
static size_t read_request(int fd, char *buf, size_t cap)
{
	size_t n = 0, need = 0;
	while (n < cap - 1) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r <= 0)
			return 0;
		n += (size_t)r;
		buf[n] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		if (!need) {
			const char *cl = strcasestr(buf, "\r\nContent-Length:");
			need = (size_t)(end + 4 - buf) + (cl ? (size_t)atol(cl + 17) : 0);
		}
		if (n >= need)
			return n;
	}
	return n;
}

static void *fake_main(void *ud)
{
	struct fake *f = ud;
	while (f->nreq < f->nreplies) {
		int fd = accept(f->lfd, NULL, NULL);
		struct timeval tv = { 5, 0 };
		if (fd < 0)
			break;
		f->accepts++;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while (f->nreq < f->nreplies) {
			if (!read_request(fd, f->req[f->nreq], sizeof(f->req[0])))
				break;
			const char *r = f->replies[f->nreq++];
			int hang = !strncmp(r, "#HANG#", 6), drop = !strncmp(r, "#DROP#", 6);
			int kill = !strncmp(r, "#KILL#", 6);
			if (hang) { /* never answer: the client's deadline must end it */
				usleep(1500000);
				break;
			}
			if (drop) /* answer, then close a kept-alive connection unannounced */
				r += 6;
			if (kill) { /* reset the connection (RST, not FIN), no answer */
				struct linger lg = { 1, 0 };
				setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
				break;
			}
			if (write(fd, r, strlen(r)) < 0)
				break;
			if (drop || strstr(r, "Connection: close"))
				break;
		}
		close(fd);
	}
	return NULL;
}

static struct xp_client *fake_start(struct fake *f, const char *token)
{
	struct sockaddr_in a = { 0 };
	socklen_t al = sizeof(a);
	struct xp_err err = { 0 };
	char addr[64];

	f->lfd = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f->lfd, 4), 0);
	assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&a, &al), 0);
	f->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", f->port);
	struct xp_client *c = xp_client_create(addr, token, &err);
	assert_non_null(c);
	return c;
}

static void fake_stop(struct fake *f, struct xp_client *c)
{
	xp_client_destroy(c); /* closes the kept-alive connection */
	pthread_join(f->th, NULL);
	close(f->lfd);
}

#define JSON_REPLY(status, body)                                                                   \
	"HTTP/1.1 " status "\r\nContent-Type: application/json\r\nContent-Length: "                \
	"%zu\r\n\r\n" body

static char *reply_text(const char *fmt, const char *body)
{
	char *r = malloc(strlen(fmt) + strlen(body) + 32);
	sprintf(r, fmt, strlen(body));
	return r;
}

static void test_wire(void **state)
{
	struct fake f = { 0 };
	struct xp_err err = { 0 };
	char *r0 = reply_text(JSON_REPLY("201 Created", "{\"id\": 7, \"state\": \"pending\"}"),
			      "{\"id\": 7, \"state\": \"pending\"}");
	char *r1 = reply_text(
		JSON_REPLY("404 Not Found",
			   "{\"error\": {\"code\": \"ENOENT\", \"message\": \"job 9 not found\"}}"),
		"{\"error\": {\"code\": \"ENOENT\", \"message\": \"job 9 not found\"}}");
	char *r2 = reply_text("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
			      "%zu\r\n\r\nline 1\nline 2\n",
			      "line 1\nline 2\n");
	char *r3 = reply_text(JSON_REPLY("200 OK", "not json"), "not json");
	f.replies[0] = r0;
	f.replies[1] = r1;
	f.replies[2] = r2;
	f.replies[3] = r3;
	f.nreplies = 4;
	struct xp_client *c = fake_start(&f, "xpt_abc");

	json_t *body = json_pack("{s:s, s:{s:i}}", "name", "a", "resources", "cpu", 2), *reply;
	assert_int_equal(xp_client_json(c, "POST", "/v1/jobs", body, &reply, &err), 201);
	json_decref(body);
	assert_int_equal(json_integer_value(json_object_get(reply, "id")), 7);
	json_decref(reply);
	assert_int_equal(xp_client_json(c, "GET", "/v1/jobs/9", NULL, &reply, &err), XP_ENOENT);
	assert_string_equal(err.text, "job 9 not found");
	assert_null(reply);
	char *text;
	size_t len;
	long status;
	assert_int_equal(xp_client_request(c, "GET", "/v1/jobs/7/logs", NULL, NULL, 0, &status,
					   &text, &len, &err),
			 0);
	assert_int_equal(status, 200);
	assert_int_equal(len, 14);
	assert_string_equal(text, "line 1\nline 2\n");
	free(text);
	assert_int_equal(xp_client_json(c, "DELETE", "/v1/queues/q", NULL, &reply, &err), XP_EIO);
	assert_non_null(strstr(err.text, "not JSON"));
	fake_stop(&f, c);

	/* one connection for all four: the handle keeps it alive */
	assert_int_equal(f.accepts, 1);
	assert_int_equal(f.nreq, 4);
	assert_non_null(strstr(f.req[0], "POST /v1/jobs HTTP/1.1\r\n"));
	assert_non_null(strstr(f.req[0], "\r\nAuthorization: Bearer xpt_abc\r\n"));
	assert_non_null(strstr(f.req[0], "\r\nContent-Type: application/json\r\n"));
	assert_non_null(strstr(f.req[0], "\r\n\r\n{\"name\":\"a\",\"resources\":{\"cpu\":2}}"));
	assert_null(strstr(f.req[0], "Expect:"));
	assert_non_null(strstr(f.req[1], "GET /v1/jobs/9 HTTP/1.1\r\n"));
	assert_null(strstr(f.req[1], "Content-Type"));
	assert_non_null(strstr(f.req[3], "DELETE /v1/queues/q HTTP/1.1\r\n"));
	free(r0);
	free(r1);
	free(r2);
	free(r3);
}

#define EPOCH_REPLY(e) "HTTP/1.1 200 OK\r\nX-Xpool-Role: leader\r\nX-Xpool-Epoch: " e "\r\n" \
			"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

/* HA: once epoch 7 answered, a reply from epoch 5 (a replaced leader) is refused, and a
 * client of several controllers goes on to the next for it. */
static void test_epoch(void **state)
{
	struct fake f = { 0 }, g = { 0 };
	struct xp_err err = { 0 };
	char *resp = NULL;
	size_t rlen = 0;
	long status = 0;
	f.replies[0] = EPOCH_REPLY("5");
	f.replies[1] = EPOCH_REPLY("7");
	f.replies[2] = EPOCH_REPLY("5");
	f.replies[3] = EPOCH_REPLY("7");
	f.nreplies = 4;
	struct xp_client *c = fake_start(&f, "t");
	for (int i = 0; i < 4; i++) {
		int rc = xp_client_request(c, "GET", "/v1/queues", NULL, NULL, 0, &status, &resp,
					   &rlen, &err);
		free(resp);
		resp = NULL;
		if (i == 2) { /* epoch 5 after 7 */
			assert_int_equal(rc, XP_EUNAVAIL);
			assert_non_null(strstr(err.text, "epoch 5, but epoch 7 leads now"));
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(status, 200);
		}
	}
	fake_stop(&f, c);

	/* a router over A then B: A answers as epoch 9, then (replaced meanwhile) as epoch 4;
	 * the router does not use that answer and takes B's (epoch 11) */
	memset(&f, 0, sizeof(f));
	f.replies[0] = EPOCH_REPLY("9");
	f.replies[1] = EPOCH_REPLY("4");
	f.nreplies = 2;
	g.replies[0] = EPOCH_REPLY("11");
	g.nreplies = 1;
	struct xp_client *ca = fake_start(&f, "t"), *cb = fake_start(&g, "t");
	char addrs[128];
	snprintf(addrs, sizeof(addrs), "127.0.0.1:%d,127.0.0.1:%d", f.port, g.port);
	struct xp_client *r = xp_client_create(addrs, "t", &err);
	assert_non_null(r);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(xp_client_request(r, "GET", "/v1/queues", NULL, NULL, 0, &status,
						   &resp, &rlen, &err), 0);
		assert_int_equal(status, 200);
		free(resp);
		resp = NULL;
	}
	xp_client_destroy(r);
	(void)state;
	fake_stop(&f, ca);
	fake_stop(&g, cb);
	assert_int_equal(f.nreq, 2); /* A answered both; B the second (after the joins) */
	assert_int_equal(g.nreq, 1);
}

/* HA: a client of one address that a follower answers with a bodyless 307 sends the request
 * on to the leader it names (X-Xpool-Leader): same method, body and token, once. A 307 naming
 * an https:// leader to an http:// client, or sent by the leader client itself (no chains),
 * stands. */
static void test_follow_leader(void **state)
{
	struct fake f = { 0 }, g = { 0 };
	struct xp_err err = { 0 };
	char r307[256], rhttps[256];
	json_t *reply = NULL;
	char *r201 = reply_text(JSON_REPLY("201 Created", "{\"id\": 5}"), "{\"id\": 5}");
	g.replies[0] = r201;
	g.replies[1] = r307; /* the leader client's own 307 stands */
	g.nreplies = 2;
	struct xp_client *gc = fake_start(&g, "t");
	snprintf(r307, sizeof(r307),
		 "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:%d/v1/jobs\r\n"
		 "X-Xpool-Leader: http://127.0.0.1:%d\r\nContent-Length: 0\r\n\r\n",
		 g.port, g.port);
	snprintf(rhttps, sizeof(rhttps),
		 "HTTP/1.1 307 Temporary Redirect\r\nX-Xpool-Leader: https://127.0.0.1:%d\r\n"
		 "Content-Length: 0\r\n\r\n", g.port);
	f.replies[0] = r307;
	f.replies[1] = rhttps;
	f.replies[2] = r307;
	f.nreplies = 3;
	struct xp_client *c = fake_start(&f, "tok");
	json_t *body = json_pack("{s:s}", "name", "a");
	assert_int_equal(xp_client_json(c, "POST", "/v1/jobs", body, &reply, &err), 201);
	assert_int_equal(json_integer_value(json_object_get(reply, "id")), 5);
	json_decref(reply);
	reply = NULL;
	/* to https:// from http://: not followed */
	assert_true(xp_client_json(c, "POST", "/v1/jobs", body, &reply, &err) < 0);
	json_decref(reply);
	reply = NULL;
	/* the leader answers 307 itself (naming itself): no chain, it stands */
	assert_true(xp_client_json(c, "POST", "/v1/jobs", body, &reply, &err) < 0);
	json_decref(reply);
	json_decref(body);
	fake_stop(&f, c);
	fake_stop(&g, gc);
	(void)state;
	assert_int_equal(f.nreq, 3);
	assert_int_equal(g.nreq, 2);
	assert_non_null(strstr(g.req[0], "POST /v1/jobs HTTP/1.1\r\n"));
	assert_non_null(strstr(g.req[0], "\r\nAuthorization: Bearer tok\r\n"));
	assert_non_null(strstr(g.req[0], "\r\n\r\n{\"name\":\"a\"}"));
	free(r201);
}

/* A router over n = 2..5 addresses of which only the one at position live answers (the
 * others refuse connections): every request reaches it, wherever it stands and whichever
 * address the router tried last. (A router that moved its start while it went round tried
 * the first address twice and never the third of three.) */
static void test_router_dead_peers(void **state)
{
	struct xp_err err = { 0 };
	char *resp = NULL;
	size_t rlen = 0;
	long status = 0;
	for (int n = 2; n <= 5; n++)
		for (int live = 0; live < n; live++) {
			struct fake f = { 0 };
			f.replies[0] = EPOCH_REPLY("3");
			f.replies[1] = EPOCH_REPLY("3");
			f.nreplies = 2;
			struct xp_client *direct = fake_start(&f, "t");
			int hold[5], port[5];
			char addrs[256] = "";
			for (int k = 0; k < n; k++) {
				port[k] = k == live ? f.port : closed_port(&hold[k]);
				snprintf(addrs + strlen(addrs), sizeof(addrs) - strlen(addrs),
					 "%s127.0.0.1:%d", k ? "," : "", port[k]);
			}
			struct xp_client *r = xp_client_create(addrs, "t", &err);
			assert_non_null(r);
			for (int i = 0; i < 2; i++) {
				int rc = xp_client_request(r, "GET", "/v1/queues", NULL, NULL, 0,
							   &status, &resp, &rlen, &err);
				if (rc != 0)
					fail_msg("%d addresses, live at %d, request %d: %s", n, live,
						 i, err.text);
				assert_int_equal(status, 200);
				free(resp);
				resp = NULL;
			}
			xp_client_destroy(r);
			fake_stop(&f, direct);
			assert_int_equal(f.nreq, 2);
			for (int k = 0; k < n; k++)
				if (k != live)
					close(hold[k]);
		}
	(void)state;
}

static void test_wire_post_without_body(void **state)
{
	struct fake f = { 0 };
	struct xp_err err = { 0 };
	char *r0 = reply_text(JSON_REPLY("200 OK", "{\"id\": 3}"), "{\"id\": 3}");
	json_t *reply;
	f.replies[0] = r0;
	f.nreplies = 1;
	struct xp_client *c = fake_start(&f, NULL);
	assert_int_equal(xp_client_json(c, "POST", "/v1/jobs/3/cancel", NULL, &reply, &err), 200);
	json_decref(reply);
	fake_stop(&f, c);
	assert_non_null(strstr(f.req[0], "POST /v1/jobs/3/cancel HTTP/1.1\r\n"));
	assert_non_null(strstr(f.req[0], "Content-Length: 0\r\n"));
	assert_null(strstr(f.req[0], "Content-Type"));
	assert_null(strstr(f.req[0], "Authorization"));
	free(r0);
}

static void test_wire_stream(void **state)
{
	struct fake f = { 0 };
	struct xp_err err = { 0 };
	struct seen s = { "", 0, 0 };
	char last[XP_SSE_ID_MAX] = "";
	f.replies[0] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: "
		       "close\r\n\r\n"
		       ": hello\n\nid: 5\nevent: job.started\ndata: {\"seq\": 5}\n\n"
		       "id: 6\nevent: job.finished\ndata: {\"seq\": 6}\n\n";
	f.replies[1] = "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
		       "Connection: close\r\n\r\n"
		       "{\"error\": {\"code\": \"EAUTH\", \"message\": \"token revoked\"}}";
	f.replies[2] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: "
		       "close\r\n\r\n{\"events\": []}";
	f.nreplies = 3;
	struct xp_client *c = fake_start(&f, "t");

	assert_int_equal(xp_client_stream(c, "/v1/events?since=4", last, record, &s, &err), 0);
	assert_string_equal(s.log, "[5|job.started|{\"seq\": 5}][6|job.finished|{\"seq\": 6}]");
	assert_string_equal(last, "6");
	assert_int_equal(xp_client_stream(c, "/v1/events?since=6", last, record, &s, &err),
			 XP_EAUTH);
	assert_string_equal(err.text, "token revoked");
	assert_int_equal(xp_client_stream(c, "/v1/events", last, record, &s, &err), XP_EUNSUPP);
	fake_stop(&f, c);
	assert_non_null(strstr(f.req[0], "GET /v1/events?since=4 HTTP/1.1\r\n"));
	assert_non_null(strstr(f.req[0], "\r\nAccept: text/event-stream\r\n"));
	assert_null(strstr(f.req[0], "Last-Event-ID"));
	assert_non_null(strstr(f.req[1], "\r\nLast-Event-ID: 6\r\n"));
}

/* The HTTP/1.1 transport's framing: chunked bodies, an interim 1xx, a
 * body read to the close, a kept-alive connection the server dropped (one
 * retry on a new one), and a server that never answers (the deadline). */
static void test_wire_framing(void **state)
{
	struct fake f = { 0 };
	struct xp_err err = { 0 };
	json_t *reply;
	f.replies[0] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		       "Transfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3;ext=1\r\n 1}\r\n0\r\n"
		       "X-Trailer: t\r\n\r\n";
	f.replies[1] = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n"
		       "{\"b\":2}";
	f.replies[2] = "#DROP#HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"c\":3}";
	f.replies[3] = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"d\":4}";
	f.replies[4] = "HTTP/1.1 204 No Content\r\n\r\n";
	f.replies[5] = "#HANG#";
	f.nreplies = 6;
	struct xp_client *c = fake_start(&f, NULL);
	static const char *const want[] = { "a", "b", "c", "d" };
	for (int i = 0; i < 4; i++) {
		assert_int_equal(xp_client_json(c, "GET", "/x", NULL, &reply, &err), 200);
		assert_int_equal(json_integer_value(json_object_get(reply, want[i])), i + 1);
		json_decref(reply);
	}
	assert_int_equal(xp_client_json(c, "DELETE", "/x", NULL, &reply, &err), 204);
	assert_true(json_is_null(reply));
	json_decref(reply);
	xp_client_set_timeout(c, 300);
	assert_int_equal(xp_client_json(c, "GET", "/slow", NULL, &reply, &err), XP_EUNAVAIL);
	assert_non_null(strstr(err.text, "did not answer in time"));
	fake_stop(&f, c);
	/* 0-2 on one connection; after the drop a new one for 3 (closed by the
	 * reply), a third for 4 and 5 */
	assert_int_equal(f.accepts, 3);
	assert_int_equal(f.nreq, 6);
}

/* A kept-alive connection that the server resets (RST) under a request, or
 * closed while it was idle: the request goes again on a new connection
 * when it may repeat (GET, an Idempotency-Key, a client marked
 * repeat-safe) and fails otherwise, so a POST the server may have acted on
 * is never sent twice. */
static void test_wire_idle_reset(void **state)
{
	struct fake f = { 0 };
	struct xp_err err = { 0 };
	json_t *reply;
	char *resp;
	size_t len;
	static const char *const key[] = { "Idempotency-Key: k1", NULL };
#define OK_REPLY(b) "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n" b
	static const char *const replies[] = {
		OK_REPLY("{\"a\":1}"), "#KILL#", OK_REPLY("{\"b\":2}"), "#KILL#",
		OK_REPLY("{\"c\":3}"), "#KILL#", OK_REPLY("{\"d\":4}"), "#KILL#",
		"#DROP#" OK_REPLY("{\"e\":5}"), OK_REPLY("{\"g\":7}")
	};
#undef OK_REPLY
	for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++)
		f.replies[f.nreplies++] = replies[i];
	struct xp_client *c = fake_start(&f, NULL);
	assert_int_equal(xp_client_json(c, "GET", "/a", NULL, &reply, &err), 200);
	json_decref(reply);
	/* reset under a GET: it goes again */
	assert_int_equal(xp_client_json(c, "GET", "/b", NULL, &reply, &err), 200);
	assert_int_equal(json_integer_value(json_object_get(reply, "b")), 2);
	json_decref(reply);
	/* reset under a POST with no key: it fails, not sent twice */
	assert_int_equal(xp_client_json(c, "POST", "/v1/jobs/3/cancel", NULL, &reply, &err),
			 XP_EUNAVAIL);
	assert_null(reply);
	/* a fresh connection, then a reset under a POST with a key: again */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(xp_client_call(c, "POST", i ? "/d" : "/c", key, NULL, "{}", 2,
						&resp, &len, &err),
				 200);
		free(resp);
	}
	/* a client marked repeat-safe (an agent's heartbeat): again */
	assert_int_equal(xp_client_set_repeat_safe(c, 1), 0);
	assert_int_equal(xp_client_json(c, "POST", "/e", NULL, &reply, &err), 200);
	assert_int_equal(json_integer_value(json_object_get(reply, "e")), 5);
	json_decref(reply);
	assert_int_equal(xp_client_set_repeat_safe(c, 0), 1);
	/* closed while idle: a POST with no key fails, a GET goes again */
	assert_int_equal(xp_client_json(c, "POST", "/f", NULL, &reply, &err), XP_EUNAVAIL);
	assert_int_equal(xp_client_json(c, "GET", "/g", NULL, &reply, &err), 200);
	json_decref(reply);
	fake_stop(&f, c);
	assert_int_equal(f.accepts, 6);
	static const char *const lines[] = { "GET /a ",	 "GET /b ",  "GET /b ",	 "POST /v1/",
					     "POST /c ", "POST /d ", "POST /d ", "POST /e ",
					     "POST /e ", "GET /g " };
	assert_int_equal(f.nreq, 10);
	for (int i = 0; i < 10; i++)
		if (strncmp(f.req[i], lines[i], strlen(lines[i])))
			fail_msg("request %d: '%.20s', want '%s'", i, f.req[i], lines[i]);
}

/* ---- tables and units ---- */

static void test_units(void **state)
{
	static const struct {
		int64_t v;
		const char *cpu, *mib, *age;
	} cases[] = {
		{ 0, "0", "0Mi", "0s" },
		{ 500, "500m", "500Mi", "0s" },
		{ 1000, "1c", "1000Mi", "1s" },
		{ 1024, "1024m", "1Gi", "1s" },
		{ 1536, "1536m", "1.5Gi", "1s" },
		{ 2500, "2500m", "2.4Gi", "2s" },
		{ 8000, "8c", "7.8Gi", "8s" },
		{ 32768, "32768m", "32Gi", "32s" },
		{ 119999, "119999m", "117.2Gi", "119s" },
		{ 120000, "120c", "117.2Gi", "2m" },
		{ 300000, "300c", "293.0Gi", "5m" },
		{ 2097152, "2097152m", "2Ti", "34m" },
		{ 7200000, "7200c", "7031.2Gi", "2h" },
		{ 172800000, "172800c", "168750Gi", "2d" },
		{ -5000, "-5c", "-4.9Gi", "0s" },
	};
	char u[XP_UNIT_LEN];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		xp_fmt_cpu(cases[i].v, u);
		if (strcmp(u, cases[i].cpu))
			fail_msg("cpu %lld: %s", (long long)cases[i].v, u);
		xp_fmt_mib(cases[i].v, u);
		if (strcmp(u, cases[i].mib))
			fail_msg("mib %lld: %s", (long long)cases[i].v, u);
		xp_fmt_age(cases[i].v, u);
		if (strcmp(u, cases[i].age))
			fail_msg("age %lld: %s", (long long)cases[i].v, u);
	}
}

static void test_table(void **state)
{
	static const char *const hdr[] = { "ID", "NAME", "STATE", "NODE", NULL };
	struct xp_table *t = xp_table_create(hdr);
	struct xp_sb out = { 0 };

	assert_int_equal(xp_table_rows(t), 0);
	xp_table_add(t, "1");
	xp_table_add(t, "train-resnet");
	xp_table_add(t, "running");
	xp_table_add(t, "gpu-a100-0");
	xp_table_addf(t, "%d", 17);
	xp_table_add(t, "café"); /* widths count characters, not bytes */
	xp_table_add(t, "");	 /* empty and NULL cells show "-" */
	xp_table_add(t, NULL);
	xp_table_add(t, "3");
	xp_table_add(t, "bad\tname\n"); /* control characters cannot break a row */
	xp_table_add(t, "pending");
	xp_table_add(t, "n");
	assert_int_equal(xp_table_rows(t), 3);
	xp_table_render(t, &out);
	assert_string_equal(out.s, "ID   NAME           STATE     NODE\n"
				   "1    train-resnet   running   gpu-a100-0\n"
				   "17   café           -         -\n"
				   "3    bad?name?      pending   n\n");
	xp_sb_free(&out);
	xp_table_destroy(t);
	xp_table_destroy(NULL);
}

/* ---- flags -> JSON spec, through the binary ---- */

/* Run `xpool ARGS` (a shell word list) with no token or config around;
 * returns the exit status, stdout+stderr in out. */
static int run_xpool(const char *args, char *out, size_t cap)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "env -u XPOOL_ADDR -u XPOOL_TOKEN HOME='%s' '%s' %s 2>&1", home,
		 XP_BINARY, args);
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	assert_non_null(p);
	while (n < cap - 1) {
		size_t r = fread(out + n, 1, cap - 1 - n, p);
		if (r == 0)
			break;
		n += r;
	}
	out[n] = '\0';
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_spec_from_flags(void **state)
{
	static const struct {
		const char *args, *want;
	} cases[] = {
		/* nothing asked: resources is required, everything in it defaults */
		{ "", "{\"resources\": {}}" },
		/* the api.md example, flag for flag */
		{ "--name train-resnet --queue default --priority 10 --env NCCL_DEBUG=INFO "
		  "--workdir /data/run1 --replicas 2 --cpu 8 --memory 32Gi --devices 1 "
		  "--compute-milli 500 --device-memory 20Gi --device-class gpu --vendor NVIDIA "
		  "--model A100-SXM4-80GB,H100-SXM5-80GB --topology same_island --label "
		  "team=vision "
		  "--duration 30s --exit-code 0 -- python train.py --epochs 3",
		  "{\"name\": \"train-resnet\", \"queue\": \"default\", \"priority\": 10,"
		  " \"command\": [\"python\", \"train.py\", \"--epochs\", \"3\"],"
		  " \"env\": {\"NCCL_DEBUG\": \"INFO\"}, \"workdir\": \"/data/run1\", "
		  "\"replicas\": 2,"
		  " \"resources\": {\"cpu\": 8, \"memory\": \"32Gi\", \"devices\": {\"count\": 1,"
		  " \"compute_milli\": 500, \"memory\": \"20Gi\", \"class\": \"gpu\","
		  " \"vendor\": \"NVIDIA\", \"models\": [\"A100-SXM4-80GB\", \"H100-SXM5-80GB\"],"
		  " \"topology\": \"same_island\"}},"
		  " \"labels\": {\"team\": \"vision\"}, \"duration\": \"30s\", \"exit_code\": 0}" },
		/* --gpus is a count of class gpu; --fraction is compute_milli; repeats */
		{ "--gpus 1 --fraction 0.25 --model A --model B --label a=1 --label b=2,c=3 "
		  "--env CUDA_VISIBLE_DEVICES=0,1 --env=X= --cpu 500m --memory 512 --duration 90",
		  "{\"env\": {\"CUDA_VISIBLE_DEVICES\": \"0,1\", \"X\": \"\"},"
		  " \"resources\": {\"cpu\": \"500m\", \"memory\": 512, \"devices\": {\"count\": 1,"
		  " \"compute_milli\": 250, \"class\": \"gpu\", \"models\": [\"A\", \"B\"]}},"
		  " \"labels\": {\"a\": \"1\", \"b\": \"2\", \"c\": \"3\"}, \"duration\": 90}" },
		/* a device option alone asks for one device; cores may be fractional */
		{ "--device-class npu --cpu 2.5 --tenant team-a",
		  "{\"tenant\": \"team-a\", \"resources\": {\"cpu\": 2.5, \"devices\": {\"count\": "
		  "1,"
		  " \"class\": \"npu\"}}}" },
		/* the scheduling flags: limits, QoS, gang, deadline, dependencies */
		{ "--replicas 2 --time-limit 2h --qos best-effort --deadline 2026-12-01T08:00:00Z "
		  "--colocate island --gang-timeout 600 --after 4 --after 5:after-not-ok",
		  "{\"replicas\": 2, \"resources\": {}, \"time_limit\": \"2h\", "
		  "\"qos\": \"best-effort\", \"deadline\": \"2026-12-01T08:00:00Z\", "
		  "\"gang\": {\"colocate\": \"island\", \"timeout\": 600}, "
		  "\"depends_on\": [{\"job\": 4}, {\"job\": 5, \"type\": \"after-not-ok\"}]}" },
		/* --gpus 0 is no devices at all; flags may follow positional words */
		{ "--gpus 0 -- sh -c 'echo hi'",
		  "{\"command\": [\"sh\", \"-c\", \"echo hi\"], \"resources\": {}}" },
	};
	char out[8192], args[2048];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_error_t je;
		snprintf(args, sizeof(args), "submit --dry-run %s", cases[i].args);
		int rc = run_xpool(args, out, sizeof(out));
		if (rc != 0)
			fail_msg("case %zu: exit %d: %s", i, rc, out);
		json_t *got = json_loads(out, 0, &je), *want = json_loads(cases[i].want, 0, &je);
		assert_non_null(want);
		if (!got || !json_equal(got, want))
			fail_msg("case %zu:\n got  %s\n want %s", i, out, cases[i].want);
		json_decref(got);
		json_decref(want);
	}
}

static void test_bad_flags(void **state)
{
	static const struct {
		const char *args, *want;
	} cases[] = {
		{ "submit --cpu x", "xpool submit: --cpu: expected cores" },
		{ "submit --cpu 0", "xpool submit: --cpu:" },
		{ "submit --memory 12parsecs", "xpool submit: --memory:" },
		{ "submit --priority 1001",
		  "xpool submit: --priority: expected an integer -1000..1000" },
		{ "submit --replicas 0", "--replicas: expected an integer 1..1024" },
		{ "submit --gpus 65", "--gpus: expected an integer 0..64" },
		{ "submit --gpus 2 --fraction 0.5", "--fraction: a fraction of a device needs a "
						    "device count of 1" },
		{ "submit --fraction 1.5", "--fraction: expected a share" },
		{ "submit --compute-milli 0", "--compute-milli: expected an integer 1..1000" },
		{ "submit --gpus 1 --devices 1", "--gpus: give --gpus or --devices" },
		{ "submit --gpus 1 --device-class npu",
		  "--device-class: --gpus asks for class gpu" },
		{ "submit --device-class tpu", "--device-class: expected gpu, npu" },
		{ "submit --topology near", "--topology: expected any, same_island or same_numa" },
		{ "submit --label novalue", "--label: expected KEY=VALUE" },
		{ "submit --env 9X=1", "--env: expected KEY=VALUE" },
		{ "submit --env A=1 --env A=2", "--env: 'A=2' is given twice" },
		{ "submit --duration soon", "--duration: expected a duration" },
		{ "submit --exit-code 256", "--exit-code: expected an integer 0..255" },
		{ "submit --time-limit 0", "--time-limit: expected a duration" },
		{ "submit --qos gold", "--qos: expected standard, best-effort or protected" },
		{ "submit --colocate rack", "--colocate: expected node, island, numa or zone" },
		{ "submit --gang-timeout never", "--gang-timeout: expected a duration" },
		{ "submit --after x", "--after: expected JOB or JOB:TYPE" },
		{ "submit --after 3:after-fail", "--after: expected a type after-ok" },
		{ "submit -f job.yaml --time-limit 1h",
		  "-f FILE cannot be combined with --time-limit" },
		{ "submit --name -x", "--name: expected 1-63 characters" },
		{ "submit --queue a/b", "--queue: expected 1-63 characters" },
		{ "submit -f job.yaml --cpu 1", "-f FILE cannot be combined with --cpu" },
		{ "submit -f job.yaml -- run", "-f FILE cannot be combined with a command" },
		{ "submit --idempotency-key ''", "flag --idempotency-key: empty value" },
		{ "submit python train.py",
		  "unexpected argument 'python' (a command goes after --" },
		{ "submit --nope", "xpool submit: unknown flag --nope" },
		{ "submit -o yaml", "--output: expected table or json, got 'yaml'" },
		{ "jobs --state done", "xpool jobs: --state: expected pending, running" },
		{ "jobs --limit 0", "xpool jobs: --limit: expected an integer 1..1000" },
		{ "jobs extra", "xpool jobs: unexpected argument 'extra'" },
		{ "job", "xpool job: missing ID" },
		{ "job abc", "xpool job: job ID: expected a positive integer, got 'abc'" },
		{ "job 1 2", "xpool job: unexpected argument '2'" },
		{ "cancel 1 x", "xpool cancel: job ID: expected a positive integer, got 'x'" },
		{ "explain 0", "xpool explain: job ID: expected a positive integer" },
		{ "node 'a b'", "xpool node: node NAME: expected" },
		{ "devices --class tpu", "xpool devices: --class: expected gpu" },
		{ "events --wait 61", "xpool events: --wait: expected an integer 0..60" },
		{ "events --since -1", "xpool events: --since: expected an integer" },
		{ "events --follow --limit 5", "xpool events: --follow waits by itself" },
		{ "queue", "xpool queue: missing subcommand" },
		{ "queue drop x", "xpool queue: unknown subcommand 'drop'" },
		{ "queue create batch --weight 0",
		  "xpool queue create: --weight: expected a positive" },
		{ "token create --tenant a", "xpool token create: --name is required" },
		{ "token revoke abc", "xpool token revoke: token ID: expected a positive integer" },
		{ "jobs --addr ftp://h", "xpool jobs: --addr: bad controller address 'ftp://h'" },
		{ "jobs --token 'a b'", "xpool jobs: --token: the API token has a space" },
	};
	char out[8192];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = run_xpool(cases[i].args, out, sizeof(out));
		if (rc != 2 || !strstr(out, cases[i].want))
			fail_msg("'%s': exit %d, '%s' (want exit 2 and '%s')", cases[i].args, rc,
				 out, cases[i].want);
	}
}

static void test_cli_without_controller(void **state)
{
	char out[8192], args[1024];
	/* no token anywhere: exit 1 telling how to set one */
	assert_int_equal(run_xpool("jobs", out, sizeof(out)), 1);
	assert_non_null(strstr(out, "xpool jobs: no API token: pass --token"));
	/* nothing listening: exit 1, "cannot reach" */
	int hold;
	snprintf(args, sizeof(args), "nodes --addr 127.0.0.1:%d --token t", closed_port(&hold));
	assert_int_equal(run_xpool(args, out, sizeof(out)), 1);
	close(hold);
	assert_non_null(
		strstr(out, "xpool nodes: cannot reach the controller at http://127.0.0.1:"));
	/* --help goes to stdout with exit 0, for every verb */
	static const char *const verbs[] = {
		"submit",	"jobs",		"job",		"cancel",	 "explain",
		"logs",		"nodes",	"node",		"cordon",	 "uncordon",
		"drain",	"devices",	"queues",	"tenants",	 "tokens",
		"events",	"queue create", "queue delete", "tenant create", "token create",
		"token revoke", "cost",		"prices",	"count",	 "alerts",
		"top",		"forecast",	"advise",
	};
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		char want[64];
		snprintf(args, sizeof(args), "%s --help", verbs[i]);
		snprintf(want, sizeof(want), "usage: xpool %s", verbs[i]);
		if (run_xpool(args, out, sizeof(out)) != 0 || !strstr(out, want) ||
		    !strstr(out, "--addr ADDR") || !strstr(out, "-o, --output FORMAT"))
			fail_msg("%s --help: %s", verbs[i], out);
	}
	/* a spec file goes as it is */
	char path[300];
	snprintf(path, sizeof(path), "%s/job.yaml", home);
	write_text(path, "name: from-file\nresources: {cpu: 2}\n");
	snprintf(args, sizeof(args), "submit --dry-run -f '%s'", path);
	assert_int_equal(run_xpool(args, out, sizeof(out)), 0);
	assert_string_equal(out, "name: from-file\nresources: {cpu: 2}\n");
	snprintf(args, sizeof(args), "submit -f '%s/absent.yaml' --token t", home);
	assert_int_equal(run_xpool(args, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "xpool submit: -f:"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config_defaults, setup_home, teardown_home),
		cmocka_unit_test_setup_teardown(test_config_order, setup_home, teardown_home),
		cmocka_unit_test_setup_teardown(test_config_token_file, setup_home, teardown_home),
		cmocka_unit_test_setup_teardown(test_config_errors, setup_home, teardown_home),
		cmocka_unit_test_setup_teardown(test_config_ca_tls, setup_home, teardown_home),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_decode_error),
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_sse_parser),
		cmocka_unit_test(test_cannot_reach),
		cmocka_unit_test(test_wire),
		cmocka_unit_test(test_epoch),
		cmocka_unit_test(test_router_dead_peers),
		cmocka_unit_test(test_follow_leader),
		cmocka_unit_test(test_wire_post_without_body),
		cmocka_unit_test(test_wire_stream),
		cmocka_unit_test(test_wire_framing),
		cmocka_unit_test(test_wire_idle_reset),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_table),
		cmocka_unit_test_setup_teardown(test_spec_from_flags, setup_home, teardown_home),
		cmocka_unit_test_setup_teardown(test_bad_flags, setup_home, teardown_home),
		cmocka_unit_test_setup_teardown(test_cli_without_controller, setup_home,
						teardown_home),
	};
	return xp_run_tests(tests, NULL, NULL);
}
