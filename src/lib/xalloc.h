/*
 * xalloc: allocation that aborts on failure.
 *
 * Sizes computed from untrusted input must be bounded and checked by the
 * caller before they reach these functions; everything else treats memory
 * exhaustion as fatal, as Redis and git do.
 */
#ifndef XP_XALLOC_H
#define XP_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/* xreallocarray: realloc to nmemb*size bytes, aborting on overflow. */
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#define XNEW(T)	    ((T *)xcalloc(1, sizeof(T)))
#define XNEWV(T, n) ((T *)xcalloc((n), sizeof(T)))

#endif
