/* testutil: helpers shared by the cmocka test binaries. */
#ifndef XP_TESTUTIL_H
#define XP_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* Skip the running test and count it (cmocka's skip() alone counts as a
 * pass in ctest's summary). */
extern int xp_test_skipped;
#define xp_skip()                 \
	do {                      \
		xp_test_skipped++; \
		skip();           \
	} while (0)
/* The exit status for cmocka_run_group_tests()'s count of failures: 1 when
 * any failed, else 77 (ctest's SKIP_RETURN_CODE, set on every test) when
 * any was skipped, else 0. */
int xp_test_exit(int failed);
#define xp_run_tests(tests, setup, teardown) \
	xp_test_exit(cmocka_run_group_tests(tests, setup, teardown))

/* Path under ../shared, or NULL (after printing a skip notice) when absent. */
const char *xp_test_shared(const char *rel);
/* Write text to a fresh temporary file; returns its path (static buffer per call slot). */
char *xp_test_tmpfile(const char *suffix, const char *text);

/* One request with libcurl to http://ADDR+path, bearer token and a JSON
 * body (either may be NULL); *status gets the HTTP status. Returns the
 * reply body (malloc'd, "" when empty); fails the test if the transport
 * fails. */
char *xp_test_http(const char *addr, const char *token, const char *method, const char *path,
		   const char *body, long *status);

/* The same, the reply decoded as JSON (JSON null for an empty body, NULL
 * if it is not JSON); a new reference. */
struct json_t;
struct json_t *xp_test_json(const char *addr, const char *token, const char *method,
			    const char *path, const char *body, long *status);
/* The same, a reply that is not JSON (a job's logs) as a JSON string. */
struct json_t *xp_test_api(const char *addr, const char *token, const char *method,
			   const char *path, const char *body, long *status);
/* A TCP connection to 127.0.0.1:port from source address src (any of
 * 127/8: tests put attackers and agents on different addresses). */
int xp_test_dial(const char *src, int port);
/* printf to a connected socket, asserting every byte (up to 8 KiB) went. */
void xp_test_say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Milliseconds of the monotonic clock: deadlines of condition waits. */
long long xp_test_now_ms(void);
/* rm -rf dir, asserting it worked. */
void xp_test_rmdir(const char *dir);
/* Run SQL text on the SQLite database at path (a test that damages a
 * store on purpose), failing the test on an error. */
void xp_test_sql(const char *path, const char *text);

#endif
