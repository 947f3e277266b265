/*
 * fuzz: what the parser harnesses (tests/fuzz/fuzz_*.c) share.
 *
 * Each harness is a libFuzzer target, LLVMFuzzerTestOneInput(). `make fuzz`
 * links it with libFuzzer (clang, build-fuzz/); the normal build links it
 * with driver.c, whose main() runs it over its seed corpus
 * (tests/fuzz/corpus/NAME/) as the ctest test fuzz_NAME. A harness checks
 * properties beyond "does not crash" (round trips, error texts, field
 * paths) and reports a broken one with fz_fail(), which aborts: a crash to
 * libFuzzer, a failed test to ctest. Leaks are left to the sanitizers.
 *
 * A harness may read a mode from the input's first bytes (fz_mode): 'J'
 * JSON, 'Y' YAML, anything else by content; '!' a harness flag. Seed files
 * stay readable that way.
 */
#ifndef XP_FUZZ_H
#define XP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The corpus file being run (driver.c), or NULL under libFuzzer. */
extern const char *fz_input;

/* Print "fuzz: <what>" (and the input's file) to stderr, then abort. */
void fz_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
#define FZ_CHECK(cond, ...)                                                                        \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fz_fail(__VA_ARGS__);                                                      \
	} while (0)

/* Leading mode bytes, consumed: 'J' (*json = 1) or 'Y' (0), else *json = -1
 * (by content); '!' sets *flag (flag may be NULL: then '!' is input). */
void fz_mode(const uint8_t **data, size_t *size, int *json, int *flag);

/* A NUL-terminated copy of data (malloc'd). */
char *fz_text(const uint8_t *data, size_t size);

/* A refused input: rc is a code of the table, err carries it and a text
 * that starts with name. */
void fz_check_refused(int rc, const struct xp_err *err, const char *name);

/*
 * Field paths of a walker's error ("NAME[:LINE]: PATH: reason"). When field
 * is set, the text names it right after the name and line; when it is "", the text must not start with a path into
 * one of top (the schema's top-level keys): that would be a field's error
 * without its path, which the API would answer with "field": "".
 */
void fz_check_field(const struct xp_err *err, const char *name, const char *field,
		    const char *const *top);

#endif
