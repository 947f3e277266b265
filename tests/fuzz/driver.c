/*
 * driver: main() for the fuzz harnesses in the normal build (gcc, and
 * SANITIZE=1). Runs LLVMFuzzerTestOneInput over every file of the folders
 * (or the files) given, in name order, each in a buffer of exactly its
 * size so the sanitizers see a read past the end. This is how `make test`
 * runs each harness over its seed corpus; `make fuzz` links libFuzzer's
 * main instead. Exit 0 when every input ran, 1 when none was found.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static size_t run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	size_t cap = 4096, len = 0, n;
	unsigned char *buf = malloc(cap);
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0)
		if ((len += n) == cap)
			buf = realloc(buf, cap *= 2);
	fclose(f);
	unsigned char *exact = malloc(len ? len : 1); /* no slack past the input */
	if (!buf || !exact)
		abort();
	memcpy(exact, buf, len);
	free(buf);
	fz_input = path;
	LLVMFuzzerTestOneInput(exact, len);
	fz_input = NULL;
	free(exact);
	return 1;
}

static int visible(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static size_t run_dir(const char *dir)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, visible, alphasort);
	size_t ran = 0;
	if (n < 0) {
		perror(dir);
		exit(1);
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			ran += run_file(path);
		free(ents[i]);
	}
	free(ents);
	return ran;
}

int main(int argc, char **argv)
{
	size_t ran = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 1;
		}
		ran += S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
	}
	printf("%s: %zu inputs, every property held\n", argc > 0 ? argv[0] : "fuzz", ran);
	if (!ran)
		fprintf(stderr, "no inputs: give corpus folders or files\n");
	return ran ? 0 : 1;
}
