/*
 * fuzz_csv: the strict CSV reader under the simulator's trace readers
 * (src/lib/csv.h), over a buffer (xp_csv_open_mem; xp_csv_open reads a
 * file and hands it to the same code).
 *
 * Checks: an opened file has a header of distinct columns that
 * xp_csv_col finds at their own index; every row has exactly the header's
 * field count (or the row is refused with a text naming the file), line
 * numbers only grow, and every field is a string no longer than the input;
 * a refusal carries its code and a text naming the file.
 */
#include <string.h>

#include "fuzz.h"
#include "lib/csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xp_csv *c;
	struct xp_err err = { 0 };
	int rc = xp_csv_open_mem("input", (const char *)data, size, &c, &err);
	if (rc < 0) {
		fz_check_refused(rc, &err, "input");
		return 0;
	}
	size_t ncols = xp_csv_ncols(c), line = xp_csv_line(c);
	FZ_CHECK(ncols >= 1 && ncols <= XP_CSV_MAX_FIELDS, "%zu columns", ncols);
	for (size_t i = 0; i < ncols; i++)
		FZ_CHECK(xp_csv_col(c, xp_csv_colname(c, i)) == (int)i, "column %zu '%s' found at %d",
			 i, xp_csv_colname(c, i), xp_csv_col(c, xp_csv_colname(c, i)));
	while ((rc = xp_csv_next(c, &err)) > 0) {
		FZ_CHECK(xp_csv_line(c) > line, "line %zu after line %zu", xp_csv_line(c), line);
		line = xp_csv_line(c);
		for (size_t i = 0; i < ncols; i++)
			FZ_CHECK(strlen(xp_csv_field(c, i)) <= size, "field %zu is longer than the input",
				 i);
	}
	if (rc < 0)
		fz_check_refused(rc, &err, "input");
	xp_csv_close(c);
	return 0;
}
