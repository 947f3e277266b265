/*
 * strbuf: a growable NUL-terminated string. The buffer owns its bytes;
 * xp_sb_steal() hands them to the caller.
 */
#ifndef XP_STRBUF_H
#define XP_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct xp_sb {
	char *s;
	size_t len, cap;
};

void xp_sb_init(struct xp_sb *b);
void xp_sb_free(struct xp_sb *b);
void xp_sb_putc(struct xp_sb *b, char c);
void xp_sb_puts(struct xp_sb *b, const char *s);
void xp_sb_putn(struct xp_sb *b, const char *s, size_t n);
void xp_sb_printf(struct xp_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void xp_sb_vprintf(struct xp_sb *b, const char *fmt, va_list ap);
void xp_sb_reset(struct xp_sb *b);
char *xp_sb_steal(struct xp_sb *b);

#endif
