/* fuzz: the harnesses' shared checks (see fuzz.h). */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fz_input;

void fz_fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fuzz: property broken");
	if (fz_input)
		fprintf(stderr, " on %s", fz_input);
	fprintf(stderr, ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void fz_mode(const uint8_t **data, size_t *size, int *json, int *flag)
{
	*json = -1;
	if (flag)
		*flag = 0;
	for (int i = 0; i < 2 && *size; i++) {
		uint8_t c = **data;
		if (c == 'J' || c == 'Y')
			*json = c == 'J';
		else if (c == '!' && flag)
			*flag = 1;
		else
			return;
		(*data)++;
		(*size)--;
	}
}

char *fz_text(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

void fz_check_refused(int rc, const struct xp_err *err, const char *name)
{
	FZ_CHECK(rc < 0, "refused with rc %d, not a negative code", rc);
	FZ_CHECK(err->code == rc, "rc %d but err.code %d (%s)", rc, err->code, err->text);
	FZ_CHECK(strcmp(xp_errname(rc), "EUNKNOWN") != 0 && strcmp(xp_errname(rc), "ESYS") != 0,
		 "rc %d is not a code of the table", rc);
	FZ_CHECK(err->text[0], "refused (%s) without an error text", xp_errname(rc));
	FZ_CHECK(!strncmp(err->text, name, strlen(name)), "error text does not start with '%s': %s",
		 name, err->text);
}

/* past "NAME", ":LINE" and ":COL" and ": " of an error text; NULL if not so */
static const char *after_where(const char *text, const char *name)
{
	size_t n = strlen(name);
	if (strncmp(text, name, n) != 0)
		return NULL;
	const char *p = text + n;
	for (int i = 0; i < 2 && p[0] == ':' && p[1] >= '0' && p[1] <= '9'; i++)
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	return p[0] == ':' && p[1] == ' ' ? p + 2 : NULL;
}

void fz_check_field(const struct xp_err *err, const char *name, const char *field,
		    const char *const *top)
{
	const char *rest = after_where(err->text, name);
	if (field[0]) {
		size_t n = strlen(field); /* keys are the user's: any text, '.' and '[' too */
		FZ_CHECK(rest && !strncmp(rest, field, n) && rest[n] == ':',
			 "field '%s' is not the path the error text names: %s", field, err->text);
		return;
	}
	if (!rest)
		return;
	size_t tok = strcspn(rest, ":. [");
	if (rest[tok] == ' ')
		return; /* a sentence, not a path */
	for (size_t i = 0; top[i]; i++)
		FZ_CHECK(strlen(top[i]) != tok || strncmp(rest, top[i], tok) != 0,
			 "an error about field '%.*s' with an empty field path: %s", (int)tok,
			 rest, err->text);
}
