/*
 * vec: a typed growable array as a macro family.
 *
 *   XP_VEC(int) v = {0};
 *   xp_vec_push(&v, 3);
 *   ... v.v[i] for i < v.n ...
 *   xp_vec_free(&v);
 *
 * The vector owns its buffer, not what the elements point to.
 */
#ifndef XP_VEC_H
#define XP_VEC_H

#include <stdlib.h>

#include "xalloc.h"

#define XP_VEC(T)                                                                                  \
	struct {                                                                                   \
		T *v;                                                                              \
		size_t n, cap;                                                                     \
	}

#define xp_vec_reserve(vec, want)                                                                  \
	do {                                                                                       \
		if ((want) > (vec)->cap) {                                                         \
			size_t nc_ = (vec)->cap ? (vec)->cap * 2 : 8;                              \
			while (nc_ < (want))                                                       \
				nc_ *= 2;                                                          \
			(vec)->v = xreallocarray((vec)->v, nc_, sizeof(*(vec)->v));                \
			(vec)->cap = nc_;                                                          \
		}                                                                                  \
	} while (0)

#define xp_vec_push(vec, x)                                                                        \
	do {                                                                                       \
		xp_vec_reserve((vec), (vec)->n + 1);                                               \
		(vec)->v[(vec)->n++] = (x);                                                        \
	} while (0)

#define xp_vec_free(vec)                                                                           \
	do {                                                                                       \
		free((vec)->v);                                                                    \
		(vec)->v = NULL;                                                                   \
		(vec)->n = (vec)->cap = 0;                                                         \
	} while (0)

#endif
