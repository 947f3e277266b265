/* testutil: helpers shared by the cmocka test binaries. */
#ifndef XP_TESTUTIL_H
#define XP_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* Path under ../shared, or NULL (after printing a skip notice) when absent. */
const char *xp_test_shared(const char *rel);
/* Write text to a fresh temporary file; returns its path (static buffer per call slot). */
char *xp_test_tmpfile(const char *suffix, const char *text);

#endif
