/*
 * flags: command-line flags for the xpool verbs.
 *
 * Flags are "--name value", "--name=value", "-x value" where the flag has a
 * short name, or, for booleans, "--name".
 * A flag given twice appends to a string flag with a ',' (so "--pods a
 * --pods b" equals "--pods a,b"). Unknown flags, missing values and stray
 * arguments are errors naming the flag. "-h" / "--help" set *help.
 */
#ifndef XP_FLAGS_H
#define XP_FLAGS_H

#include <stdio.h>

#include "../lib/err.h"

enum xp_flag_kind { XP_FLAG_STR, XP_FLAG_BOOL };

struct xp_flag {
	const char *name; /* without the dashes */
	int kind;	  /* enum xp_flag_kind */
	const char *metavar;
	const char *help;
	char short_name; /* "-o VALUE" for --output, 0 = none */
	char *sval;	 /* result (malloc'd) or NULL; preset defaults are not freed */
	int bval;
	int given;
};

/* Parse argv[0..argc); returns 0 or a negative code with err naming the flag. */
int xp_flags_parse(struct xp_flag *flags, int argc, char **argv, int *help, struct xp_err *err);
void xp_flags_free(struct xp_flag *flags);
void xp_flags_usage(FILE *out, const char *synopsis, const char *about,
		    const struct xp_flag *flags);
struct xp_flag *xp_flag_get(struct xp_flag *flags, const char *name);
/* The index of a string flag's value in NULL-terminated names (the enum
 * order), or an error "--name: expected a, b or c, got 'x'". */
int xp_flag_choice(struct xp_flag *flags, const char *name, const char *const *names, int *out,
		   struct xp_err *err);

#endif
