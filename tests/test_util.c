/*
 * test_util: sha256 against FIPS test vectors, RFC 3339 and duration text,
 * and the intmap against a naive array on random operations.
 */
#include "testutil.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "lib/intmap.h"
#include "lib/rng.h"
#include "lib/sha256.h"
#include "lib/pyrand.h"
#include "lib/timefmt.h"

static void test_sha256(void **st)
{
	char hex[65];
	xp_sha256_hex("", 0, hex);
	assert_string_equal(hex,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	xp_sha256_hex("abc", 3, hex);
	assert_string_equal(hex,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	xp_sha256_hex(m, strlen(m), hex);
	assert_string_equal(hex,
			    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* one million 'a': exercises many blocks */
	char *a = malloc(1000000);
	memset(a, 'a', 1000000);
	xp_sha256_hex(a, 1000000, hex);
	assert_string_equal(hex,
			    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
	/* lengths around the padding boundary (55, 56, 63, 64 bytes) differ */
	char prev[65] = "";
	for (size_t n = 54; n <= 65; n++) {
		char buf[80];
		memset(buf, 'x', n);
		xp_sha256_hex(buf, n, hex);
		assert_string_not_equal(hex, prev);
		strcpy(prev, hex);
	}
}

static void test_time(void **st)
{
	char buf[XP_TIME_LEN];
	int64_t ms;
	xp_time_format(0, buf);
	assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
	xp_time_format(1795953600123LL, buf);
	assert_string_equal(buf, "2026-11-29T12:00:00.123Z");
	assert_int_equal(xp_time_parse(buf, &ms), 0);
	assert_int_equal(ms, 1795953600123LL);
	assert_int_equal(xp_time_parse("2026-11-29T12:00:00Z", &ms), 0);
	assert_int_equal(ms, 1795953600000LL);
	assert_int_equal(xp_time_parse("2026-11-29T12:00:00.5Z", &ms), 0);
	assert_int_equal(ms, 1795953600500LL);
	assert_true(xp_time_parse("2026-11-29 08:00:00Z", &ms) < 0);
	assert_true(xp_time_parse("2026-11-29T12:00:00", &ms) < 0);
	/* dates and times that do not exist, not rolled over */
	assert_true(xp_time_parse("2026-02-30T00:00:00Z", &ms) < 0);
	assert_true(xp_time_parse("2026-02-29T00:00:00Z", &ms) < 0);
	assert_int_equal(xp_time_parse("2028-02-29T00:00:00Z", &ms), 0);
	assert_true(xp_time_parse("2026-04-31T00:00:00Z", &ms) < 0);
	assert_true(xp_time_parse("2026-11-29T24:00:00Z", &ms) < 0);
	assert_true(xp_time_parse("2026-11-29T12:60:00Z", &ms) < 0);
	assert_true(xp_time_parse("2026-11-29T12:00:00.Z", &ms) < 0);
	assert_true(xp_time_parse(NULL, &ms) < 0); /* an absent JSON field */
}

static void test_duration(void **st)
{
	static const struct {
		const char *s;
		int rc;
		int64_t ms;
	} t[] = {
		{ "30s", 0, 30000 },	 { "5m", 0, 300000 },
		{ "1h30m", 0, 5400000 }, { "250ms", 0, 250 },
		{ "2d", 0, 172800000 },	 { "1.5s", 0, 1500 },
		{ "45", 0, 45000 },	 { "0", 0, 0 },
		{ "", XP_EINVAL, 0 },	 { "s", XP_EINVAL, 0 },
		{ "5x", XP_EINVAL, 0 },	 { "-5s", XP_EINVAL, 0 },
		{ "5 s", XP_EINVAL, 0 }, { "1000d", XP_ERANGE, 0 },
		/* Slurm's clock forms */
		{ "1:00:00", 0, 3600000 },	 { "90:30", 0, 5430000 },
		{ "2-12", 0, 216000000 },	 { "1-00:30", 0, 88200000 },
		{ "1-02:03:04", 0, 93784000 },	 { "100:00:00", 0, 360000000 },
		{ "1:60:00", XP_EINVAL, 0 },	 { "2-24", XP_EINVAL, 0 },
		{ "1:2:3:4", XP_EINVAL, 0 },	 { "1-", XP_EINVAL, 0 },
		{ ":30", XP_EINVAL, 0 },	 { "1:30s", XP_EINVAL, 0 },
		{ "1-2-3", XP_EINVAL, 0 },	 { "400-00", XP_ERANGE, 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int64_t ms = -1;
		int rc = xp_duration_parse(t[i].s, 365LL * 86400000, &ms);
		if (rc != t[i].rc)
			fail_msg("'%s': rc %d, expected %d", t[i].s, rc, t[i].rc);
		if (rc == 0 && ms != t[i].ms)
			fail_msg("'%s': %lld ms, expected %lld", t[i].s, (long long)ms,
				 (long long)t[i].ms);
	}
	int64_t ms;
	assert_int_equal(xp_slurm_time_parse("30", 365LL * 86400000, &ms), 0);
	assert_int_equal(ms, 1800000); /* Slurm: a bare number is minutes */
	assert_int_equal(xp_slurm_time_parse("30s", 365LL * 86400000, &ms), XP_EINVAL);
	char b[16];
	xp_duration_short(300000, b, sizeof(b));
	assert_string_equal(b, "5m");
	xp_duration_short(42000, b, sizeof(b));
	assert_string_equal(b, "42s");
}

/* the intmap against a plain array of (key, value) on random operations */
static void test_intmap_reference(void **st)
{
	struct xp_intmap m;
	struct xp_rng rng;
	enum { KEYS = 3000 };
	static void *ref[KEYS];
	xp_intmap_init(&m);
	xp_rng_seed(&rng, 5);
	memset(ref, 0, sizeof(ref));
	for (int op = 0; op < 200000; op++) {
		uint64_t k = 1 + xp_rng_below(&rng, KEYS - 1);
		void *v = (void *)(uintptr_t)(op + 1);
		switch (xp_rng_below(&rng, 3)) {
		case 0:
			xp_intmap_put(&m, k, v);
			ref[k % KEYS] = v;
			break;
		case 1:
			assert_ptr_equal(xp_intmap_del(&m, k), ref[k % KEYS]);
			ref[k % KEYS] = NULL;
			break;
		default:
			assert_ptr_equal(xp_intmap_get(&m, k), ref[k % KEYS]);
		}
	}
	size_t n = 0;
	for (int i = 0; i < KEYS; i++)
		n += ref[i] != NULL;
	assert_int_equal(m.n, n);
	xp_intmap_free(&m);
}

/* CPython's random.Random, draw for draw; the expected values are what
 * CPython 3.11 prints for the same calls */
static void test_pyrand(void **st)
{
	(void)st;
	struct xp_pyrand r;
	xp_pyrand_seed(&r, 0);
	assert_true(xp_pyrand_random(&r) == 0.8444218515250481);
	assert_true(xp_pyrand_random(&r) == 0.7579544029403025);
	assert_true(xp_pyrand_random(&r) == 0.420571580830845);
	xp_pyrand_seed(&r, 2);
	assert_true(xp_pyrand_random(&r) == 0.9560342718892494);
	assert_true(xp_pyrand_random(&r) == 0.9478274870593494);
	assert_int_equal(xp_pyrand_bits(&r, 5), 1);
	assert_int_equal(xp_pyrand_below(&r, 26), 2);
	assert_true(xp_pyrand_uniform(&r, 1.5, 3) == 1.6273079927383824);
	xp_pyrand_seed(&r, 12345678901ULL); /* a seed of two 32-bit words */
	assert_true(xp_pyrand_random(&r) == 0.9460118159397316);
	assert_true(xp_pyrand_random(&r) == 0.3279999559233737);
	static const uint32_t choices[] = { 7, 18, 17, 4, 11 };
	xp_pyrand_seed(&r, 3);
	for (int i = 0; i < 5; i++)
		assert_int_equal(xp_pyrand_below(&r, 26), choices[i]);
	xp_pyrand_seed(&r, 3); /* Gavel's inter-arrival: -ln(1 - U) * lam */
	assert_true(fabs(-log(1.0 - xp_pyrand_random(&r)) * 900 - 244.5860729103015) < 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_intmap_reference),
		cmocka_unit_test(test_pyrand),
	};
	return xp_run_tests(tests, NULL, NULL);
}
