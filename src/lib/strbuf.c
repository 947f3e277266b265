/* strbuf: growable strings (see strbuf.h). */
#include "strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void xp_sb_init(struct xp_sb *b)
{
	b->cap = 64;
	b->s = xmalloc(b->cap);
	b->s[0] = '\0';
	b->len = 0;
}

void xp_sb_free(struct xp_sb *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

static void reserve(struct xp_sb *b, size_t extra)
{
	if (!b->s)
		xp_sb_init(b);
	if (b->len + extra + 1 > b->cap) {
		while (b->len + extra + 1 > b->cap)
			b->cap *= 2;
		b->s = xrealloc(b->s, b->cap);
	}
}

void xp_sb_putn(struct xp_sb *b, const char *s, size_t n)
{
	reserve(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void xp_sb_putc(struct xp_sb *b, char c)
{
	xp_sb_putn(b, &c, 1);
}

void xp_sb_puts(struct xp_sb *b, const char *s)
{
	xp_sb_putn(b, s, strlen(s));
}

void xp_sb_vprintf(struct xp_sb *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	reserve(b, 0);
	va_copy(ap2, ap);
	n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return;
	if ((size_t)n + 1 > b->cap - b->len) {
		reserve(b, (size_t)n);
		vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	}
	b->len += (size_t)n;
}

void xp_sb_printf(struct xp_sb *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	xp_sb_vprintf(b, fmt, ap);
	va_end(ap);
}

void xp_sb_reset(struct xp_sb *b)
{
	reserve(b, 0);
	b->len = 0;
	b->s[0] = '\0';
}

char *xp_sb_steal(struct xp_sb *b)
{
	char *s;
	reserve(b, 0);
	s = b->s;
	b->s = NULL;
	b->len = b->cap = 0;
	return s;
}
