/* testutil: helpers shared by the cmocka test binaries (see testutil.h). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
