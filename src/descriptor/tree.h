/*
 * tree: a small generic document tree that both descriptor syntaxes (YAML
 * and JSON) are read into, so one schema walker serves both.
 *
 * A node is a map, a sequence or a scalar. Scalars keep their text and
 * whether they were quoted (a JSON string, a quoted or block YAML scalar);
 * numbers, booleans and null stay plain text, and the walker decides what
 * a field means. Maps keep their keys in document order and refuse
 * duplicates. Each node carries the 1-based source line of its start, or 0
 * when unknown (JSON values).
 *
 * The readers bound what untrusted input can make them build: nesting
 * depth, keys per map, nodes per document and bytes per document.
 *
 * The second half is schema-agnostic help for walking a tree: the path of
 * the current field for error text, and checked typed getters (integers,
 * quantities, strings, enum names, allowed keys).
 *
 * Ownership: a container owns its children; xp_tree_destroy() frees a node
 * and everything under it. The add functions take their value even when
 * they fail.
 */
#ifndef XP_DESC_TREE_H
#define XP_DESC_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/err.h"

#define XP_TREE_MAX_DEPTH 64		     /* nested maps / sequences */
#define XP_TREE_MAX_KEYS  256		     /* keys in one map */
#define XP_TREE_MAX_NODES (4u << 20)	     /* nodes in one document */
#define XP_TREE_MAX_BYTES ((size_t)32 << 20) /* bytes of one document */

enum xp_tree_kind { XP_TREE_SCALAR, XP_TREE_MAP, XP_TREE_SEQ };

struct xp_tree {
	uint8_t kind;	/* enum xp_tree_kind */
	uint8_t quoted; /* scalar: written as a string, not as a plain word */
	uint32_t line;	/* 1-based line of the node's start; 0 = unknown */
	char *text;	/* scalar: NUL-terminated text (no NUL inside) */
	size_t len;	/* scalar: strlen(text) */
	/* map and sequence: children in document order; maps also keys */
	struct xp_tree **kids;
	char **keys;
	uint32_t *key_lines, *key_hash;
	size_t n, cap;
};

/* A new empty map or sequence. */
struct xp_tree *xp_tree_new(enum xp_tree_kind kind, uint32_t line);
/* A new scalar; text is copied. */
struct xp_tree *xp_tree_new_scalar(const char *text, size_t len, int quoted, uint32_t line);
void xp_tree_destroy(struct xp_tree *t);

/* Append key -> val to a map (takes val). XP_EEXIST on a duplicate key,
 * XP_ETOOBIG past XP_TREE_MAX_KEYS. */
int xp_tree_map_add(struct xp_tree *map, const char *key, size_t keylen, uint32_t key_line,
		    struct xp_tree *val);
/* Append val to a sequence (takes val). */
void xp_tree_seq_add(struct xp_tree *seq, struct xp_tree *val);

/* Value of key in map, or NULL when absent (or map is not a map). */
const struct xp_tree *xp_tree_get(const struct xp_tree *map, const char *key);
/* Is t a plain null scalar: "", "~", "null", "Null" or "NULL"? */
int xp_tree_is_null(const struct xp_tree *t);
/* "a map", "a list", "a string", "a number or word" for error text. */
const char *xp_tree_kind_name(const struct xp_tree *t);

/*
 * Readers: parse buf[0..len) into *out (NULL for an empty YAML stream).
 * On error return a negative code with err->text "NAME:LINE: PATH: reason"
 * (or "NAME:LINE:COL: ..." for syntax errors), *out untouched, and field
 * (when not NULL) the PATH of a value's error (a duplicate key, an anchor,
 * a value nested too deep), "" for a syntax error.
 */
int xp_tree_from_yaml(const char *name, const char *buf, size_t len, struct xp_tree **out,
		      char field[320], struct xp_err *err);
int xp_tree_from_json(const char *name, const char *buf, size_t len, struct xp_tree **out,
		      char field[320], struct xp_err *err);

/*
 * Format detection and reading. xp_tree_parse() picks the reader: JSON when
 * json > 0, YAML when json == 0, and for json < 0 by name (.json, .yaml,
 * .yml) or else by content (first non-space byte '{' or '[' means JSON).
 * xp_tree_read_file() reads at most XP_TREE_MAX_BYTES into a new buffer.
 */
int xp_tree_parse(const char *name, const char *buf, size_t len, int json, struct xp_tree **out,
		  struct xp_err *err);
/* The same, with the faulty value's path in field as the readers give it
 * ("" on success and for the document as a whole). */
int xp_tree_parse_field(const char *name, const char *buf, size_t len, int json,
			struct xp_tree **out, char field[320], struct xp_err *err);
int xp_tree_read_file(const char *path, char **buf, size_t *len, struct xp_err *err);

/*
 * Walking a tree against a schema. struct xp_walk carries the file name and
 * the path of the current field ("nodes[2].devices[0].memory"); callers
 * push a key or index before looking at a value and pop after. Errors read
 * "NAME:LINE: PATH: reason" (no LINE when the node has none) and return
 * the code.
 *
 * Getters (xp_walk_get_*) look a key up in a map: they return 0 when it is
 * absent or null (out untouched), 1 when set, or a negative code after an
 * error that names the field.
 */
struct xp_walk {
	const char *name;
	struct xp_err *err;
	size_t plen;
	char path[320];
	char field[320]; /* the path of the field of the last error ("" = the document) */
};

/* s made safe for error text (control bytes as '?', cut at 64 bytes). */
struct xp_shown {
	char s[72];
};
struct xp_shown xp_show(const char *s);
#define XP_SHOW(str) (xp_show(str).s)

int xp_walk_fail(struct xp_walk *w, uint32_t line, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
size_t xp_walk_push_key(struct xp_walk *w, const char *key);
size_t xp_walk_push_idx(struct xp_walk *w, size_t i);
void xp_walk_pop(struct xp_walk *w, size_t mark);

/* The value of key in map, or NULL when absent or null. */
const struct xp_tree *xp_tree_field(const struct xp_tree *map, const char *key);
/* v must be of kind (what names it in the error: "a map"). */
int xp_walk_want(struct xp_walk *w, const struct xp_tree *v, enum xp_tree_kind kind,
		 const char *what);
/* v must be a list of at most max entries. */
int xp_walk_list(struct xp_walk *w, const struct xp_tree *v, size_t max);
/* Every key of map must be in allowed (NULL-terminated); else an error
 * with a "did you mean" hint or the list of allowed keys. */
int xp_walk_keys(struct xp_walk *w, const struct xp_tree *map, const char *const *allowed);
/* Which of two alias keys map uses (*key = NULL: neither); both is an error. */
int xp_walk_alias(struct xp_walk *w, const struct xp_tree *map, const char *a, const char *b,
		  const char **key);

int xp_walk_int(struct xp_walk *w, const struct xp_tree *v, int64_t min, int64_t max, int64_t *out);
/* A quantity of family q (see parse.h) at most max, rounded to an integer. */
int xp_walk_qty(struct xp_walk *w, const struct xp_tree *v, int q, double max, uint64_t *out);
int xp_walk_str(struct xp_walk *w, const struct xp_tree *v, size_t max, const char **out);
/* A string, or (lists) a list of strings joined with ','; appended to sb;
 * null gives "". At most 4096 bytes. */
struct xp_sb;
int xp_walk_text(struct xp_walk *w, const struct xp_tree *v, int lists, struct xp_sb *sb);

int xp_walk_get_int(struct xp_walk *w, const struct xp_tree *map, const char *key, int64_t min,
		    int64_t max, int64_t *out);
int xp_walk_get_qty(struct xp_walk *w, const struct xp_tree *map, const char *key, int q,
		    double max, uint64_t *out);
int xp_walk_get_str(struct xp_walk *w, const struct xp_tree *map, const char *key, size_t max,
		    const char **out);
/* A name parsed by parse() (negative: unknown); expect lists the names. */
int xp_walk_get_enum(struct xp_walk *w, const struct xp_tree *map, const char *key,
		     int (*parse)(const char *), const char *expect, int *out);

/* Shared by the schema walker (descriptor.c) and the writer (json_tree.c). */
#define XP_DESC_MAX_NODES 1000000 /* nodes in one cluster, after count replication */
/* Link kinds that make the devices of one entry an island (needs model.h). */
#define XP_DESC_FABRIC ((1 << XP_LINK_NVLINK) | (1 << XP_LINK_HCCS) | (1 << XP_LINK_XGMI))

#endif
