/*
 * test_crash: durability of acknowledged submissions through the whole
 * controller. A real `xpool server` process runs on a fresh data directory;
 * 64 client threads submit uniquely named jobs over HTTP and record the
 * ones acknowledged (201); at a random moment the server gets SIGKILL.
 * After a restart on the same directory every acknowledged job must be
 * present exactly once, and no name may appear twice (an unacknowledged
 * submission may or may not have made it). Rounds: XP_CRASH_ROUNDS
 * (default 3; bench/soak_crash.sh runs more).
 */
#include "testutil.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/rng.h"
#include "lib/strbuf.h"
#include "lib/xalloc.h"

#define CLIENTS 64

struct server {
	pid_t pid;
	char addr[128];
};

static int start_server(const char *dir, struct server *s)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	s->pid = fork();
	if (s->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl(XP_BINARY, XP_BINARY, "server", "--data", dir, "--listen", "127.0.0.1:0",
		      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	FILE *f = fdopen(fds[0], "r");
	char line[512];
	s->addr[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "address: ", 9)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(s->addr, sizeof(s->addr), "%.100s", line + 9);
			break;
		}
	fclose(f);
	return s->addr[0] ? 0 : -1;
}

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
	if (ud)
		xp_sb_putn(ud, p, sz * n);
	return sz * n;
}

struct client {
	int id;
	const char *addr, *token;
	char **acked;
	size_t nacked, cap;
	volatile int *stop;
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	char url[256], auth[256], body[256];
	snprintf(url, sizeof(url), "%s/v1/jobs", c->addr);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", c->token);
	hdr = curl_slist_append(hdr, auth);
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	for (int n = 0; !__atomic_load_n(c->stop, __ATOMIC_ACQUIRE); n++) {
		char name[64];
		long status = 0;
		snprintf(name, sizeof(name), "c%d-%d", c->id, n);
		snprintf(body, sizeof(body), "{\"name\":\"%s\",\"resources\":{\"cpu\":\"100m\"}}",
			 name);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		if (curl_easy_perform(h) != CURLE_OK)
			break; /* the server is gone */
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		if (status == 201) {
			if (c->nacked == c->cap) {
				c->cap = c->cap ? 2 * c->cap : 256;
				c->acked = xreallocarray(c->acked, c->cap, sizeof(char *));
			}
			c->acked[c->nacked++] = xstrdup(name);
		} else if (status != 503) {
			fprintf(stderr, "client %d: status %ld\n", c->id, status);
			break;
		}
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* every job name on the server, sorted */
static char **list_names(const char *addr, const char *token, size_t *n)
{
	char **names = NULL;
	size_t cap = 0;
	long long after = 0;
	*n = 0;
	for (;;) {
		CURL *h = curl_easy_init();
		struct curl_slist *hdr = NULL;
		struct xp_sb sb;
		char url[256], auth[256];
		xp_sb_init(&sb);
		snprintf(url, sizeof(url), "%s/v1/jobs?limit=1000&after=%lld", addr, after);
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		hdr = curl_slist_append(hdr, auth);
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &sb);
		assert_int_equal(curl_easy_perform(h), CURLE_OK);
		curl_slist_free_all(hdr);
		curl_easy_cleanup(h);
		json_error_t e;
		json_t *o = json_loads(sb.s, 0, &e), *jobs = json_object_get(o, "jobs"), *j;
		size_t i;
		assert_non_null(jobs);
		json_array_foreach(jobs, i, j)
		{
			if (*n == cap) {
				cap = cap ? 2 * cap : 1024;
				names = xreallocarray(names, cap, sizeof(char *));
			}
			names[(*n)++] = xstrdup(json_string_value(json_object_get(j, "name")));
		}
		json_t *next = json_object_get(o, "next");
		int more = json_is_integer(next);
		if (more)
			after = json_integer_value(next);
		json_decref(o);
		xp_sb_free(&sb);
		if (!more)
			break;
	}
	qsort(names, *n, sizeof(char *), cmp_str);
	return names;
}

static void one_round(uint64_t seed)
{
	char dir[] = "/tmp/xpcrashXXXXXX", tokpath[256], token[128] = "";
	struct server s;
	struct client cl[CLIENTS];
	pthread_t tid[CLIENTS];
	volatile int stop = 0;
	struct xp_rng rng;

	xp_rng_seed(&rng, seed);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(start_server(dir, &s), 0);
	snprintf(tokpath, sizeof(tokpath), "%s/admin.token", dir);
	FILE *tf = fopen(tokpath, "r");
	assert_non_null(tf);
	assert_non_null(fgets(token, sizeof(token), tf));
	fclose(tf);
	token[strcspn(token, "\n")] = '\0';
	for (int i = 0; i < CLIENTS; i++) {
		memset(&cl[i], 0, sizeof(cl[i]));
		cl[i].id = i;
		cl[i].addr = s.addr;
		cl[i].token = token;
		cl[i].stop = &stop;
		pthread_create(&tid[i], NULL, client_main, &cl[i]);
	}
	usleep((useconds_t)(200000 + xp_rng_below(&rng, 600000)));
	kill(s.pid, SIGKILL);
	waitpid(s.pid, NULL, 0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	size_t acked = 0;
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(tid[i], NULL);
		acked += cl[i].nacked;
	}
	assert_int_equal(start_server(dir, &s), 0);
	size_t n;
	char **names = list_names(s.addr, token, &n);
	for (size_t i = 1; i < n; i++)
		if (!strcmp(names[i], names[i - 1]))
			fail_msg("job %s is present twice after the restart", names[i]);
	for (int i = 0; i < CLIENTS; i++)
		for (size_t k = 0; k < cl[i].nacked; k++) {
			if (!bsearch(&cl[i].acked[k], names, n, sizeof(char *), cmp_str))
				fail_msg("acknowledged job %s is missing after the restart",
					 cl[i].acked[k]);
			free(cl[i].acked[k]);
		}
	print_message("  round %llu: %zu acknowledged, %zu present after the restart\n",
		      (unsigned long long)seed, acked, n);
	assert_true(acked > 0);
	assert_true(n >= acked);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	for (int i = 0; i < CLIENTS; i++)
		free(cl[i].acked);
	kill(s.pid, SIGTERM);
	waitpid(s.pid, NULL, 0);
	xp_test_rmdir(dir);
}

static void test_crash_rounds(void **state)
{
	const char *r = getenv("XP_CRASH_ROUNDS");
	int rounds = r ? atoi(r) : 3;
	for (int i = 0; i < rounds; i++)
		one_round(1000 + (uint64_t)i);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash_rounds),
	};
	int rc = xp_run_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
