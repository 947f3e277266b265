/*
 * fuzz_gavel: Gavel's throughput tables (src/sim/gavel.h,
 * src/sim/gavel_sim.h): the isolated matrix (xp_gavel_parse), or with a
 * leading '!' the co-location table (xp_gavel_colo_parse).
 *
 * Checks: every accepted throughput is finite and >= 0; a refusal carries
 * its code and a text naming the file.
 */
#include <math.h>
#include <stdlib.h>

#include "fuzz.h"
#include "sim/gavel_sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct xp_gavel_colo colo; /* 64 KiB: not on the stack */
	struct xp_gavel_matrix m;
	struct xp_err err = { 0 };
	int is_colo = size && data[0] == '!';
	const char *buf = (const char *)data + is_colo;

	size -= (size_t)is_colo;
	if (is_colo) {
		int rc = xp_gavel_colo_parse("input", buf, size, &colo, &err);
		if (rc < 0) {
			fz_check_refused(rc, &err, "input");
			return 0;
		}
		const float *v = &colo.tput[0][0][0][0][0];
		for (size_t i = 0; i < sizeof(colo.tput) / sizeof(*v); i++)
			FZ_CHECK(isfinite(v[i]) && v[i] >= 0, "co-located throughput %zu: %g", i,
				 (double)v[i]);
		return 0;
	}
	int rc = xp_gavel_parse("input", buf, size, &m, &err);
	if (rc < 0) {
		fz_check_refused(rc, &err, "input");
		return 0;
	}
	const double *v = &m.tput[0][0][0];
	for (size_t i = 0; i < sizeof(m.tput) / sizeof(*v); i++)
		FZ_CHECK(isfinite(v[i]) && v[i] >= 0, "throughput %zu: %g", i, v[i]);
	return 0;
}
