/*
 * xp-memhog MIB: allocate MIB mebibytes and touch every page, so they
 * really count against the task's memory limit, then exit 0. Over a
 * cgroup's limit the kernel kills it (SIGKILL). Used by tests/cli_limits.sh
 * (python3 is not on every fresh machine).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 0;
	if (mib <= 0) {
		fprintf(stderr, "usage: xp-memhog MIB\n");
		return 2;
	}
	char **chunks = calloc((size_t)mib, sizeof(*chunks));
	if (!chunks)
		return 3;
	for (long i = 0; i < mib; i++) {
		chunks[i] = malloc(1 << 20);
		if (!chunks[i]) {
			fprintf(stderr, "xp-memhog: malloc failed at %ld MiB\n", i);
			return 3;
		}
		memset(chunks[i], (int)(i & 0xff) | 1, 1 << 20); /* every page, not zero */
	}
	printf("xp-memhog: holding %ld MiB\n", mib);
	fflush(stdout);
	return 0;
}
