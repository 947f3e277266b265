/*
 * verbs: the top level of both binaries - help, version, then the verb
 * table (main.c for xpool, main_daemon.c for xpoold).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *out, const char *prog, const char *blurb, const struct xp_cli_sub *verbs)
{
	fprintf(out, "usage: %s <verb> [flags]   (%s <verb> --help for each verb)\n\n%s\nverbs:\n",
		prog, prog, blurb);
	for (const struct xp_cli_sub *v = verbs; v->name; v++)
		fprintf(out, "  %-10s %s\n", v->name, v->about);
	fprintf(out, "  %-10s %s\n", "version", "print the version");
}

int xp_cli_main(const char *prog, const char *blurb, const struct xp_cli_sub *verbs, int argc,
		char **argv)
{
	if (argc < 2) {
		usage(stderr, prog, blurb, verbs);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout, prog, blurb, verbs);
		return 0;
	}
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("%s %s\n", prog, XP_VERSION);
		return 0;
	}
	for (const struct xp_cli_sub *v = verbs; v->name; v++)
		if (!strcmp(argv[1], v->name))
			return v->fn(argc - 2, argv + 2);
	fprintf(stderr, "%s: unknown verb '%s'\n", prog, argv[1]);
	usage(stderr, prog, blurb, verbs);
	return 2;
}
