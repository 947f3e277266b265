/*
 * yaml_tree: libyaml's event API -> struct xp_tree (see tree.h).
 *
 * The event API keeps libyaml from building its own document (and from
 * expanding aliases: "billion laughs" never starts). An explicit stack of
 * open containers replaces recursion, so depth is a counter we check.
 * Every new node is attached to its parent as soon as it is made, so on
 * any error freeing the root (plus pending keys on the stack) frees all.
 *
 * Refused with an error rather than half-supported: anchors and aliases,
 * tags other than the YAML core schema's, complex (non-scalar) keys,
 * duplicate keys, more than one document, NUL bytes in scalars.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "../lib/xalloc.h"
#include "tree.h"

struct frame {
	struct xp_tree *node;
	char *key; /* map: the key waiting for its value, or NULL */
	size_t keylen;
	uint32_t key_line;
};

struct ystate {
	struct xp_walk w; /* file name, error, path for error text */
	struct frame stack[XP_TREE_MAX_DEPTH];
	int depth;
	struct xp_tree *root;
	size_t nnodes;
	int ndocs;
};

static int syntax_error(struct ystate *s, yaml_parser_t *p)
{
	const char *problem = p->problem ? p->problem : "malformed YAML";

	if (p->error == YAML_MEMORY_ERROR)
		return xp_errf(s->w.err, XP_ETOOBIG, "%s: YAML parser ran out of memory",
			       s->w.name);
	if (p->error == YAML_READER_ERROR)
		return xp_errf(s->w.err, XP_EINVAL, "%s: YAML: %s at byte %zu", s->w.name, problem,
			       p->problem_offset);
	if (p->context)
		return xp_errf(s->w.err, XP_EINVAL, "%s:%zu:%zu: YAML syntax error: %s (%s)",
			       s->w.name, p->problem_mark.line + 1, p->problem_mark.column + 1,
			       problem, p->context);
	return xp_errf(s->w.err, XP_EINVAL, "%s:%zu:%zu: YAML syntax error: %s", s->w.name,
		       p->problem_mark.line + 1, p->problem_mark.column + 1, problem);
}

/* An error at line, with the path from the root to the value being read
 * (pending: include the key or index the next value goes to). */
static int yfail(struct ystate *s, uint32_t line, int pending, int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int yfail(struct ystate *s, uint32_t line, int pending, int code, const char *fmt, ...)
{
	char msg[XP_ERR_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	xp_walk_pop(&s->w, 0);
	for (int i = 0; i < s->depth; i++) {
		const struct frame *f = &s->stack[i];
		int top = i == s->depth - 1;
		if (top && !pending)
			break;
		if (f->node->kind == XP_TREE_SEQ)
			xp_walk_push_idx(&s->w, top ? f->node->n : f->node->n - 1);
		else if (!top && f->node->n)
			xp_walk_push_key(&s->w, f->node->keys[f->node->n - 1]);
		else if (top && f->key)
			xp_walk_push_key(&s->w, f->key);
	}
	return xp_walk_fail(&s->w, line, code, "%s", msg);
}

/* Tags of the YAML core schema are harmless; anything else is refused. */
static int tag_ok(const char *tag, yaml_event_type_t type)
{
	static const char *const scalar_tags[] = { "str", "int", "float", "bool", "null", NULL };
	static const char prefix[] = "tag:yaml.org,2002:";

	if (!tag)
		return 1;
	if (strncmp(tag, prefix, sizeof(prefix) - 1) != 0)
		return 0;
	tag += sizeof(prefix) - 1;
	if (type == YAML_MAPPING_START_EVENT)
		return strcmp(tag, "map") == 0;
	if (type == YAML_SEQUENCE_START_EVENT)
		return strcmp(tag, "seq") == 0;
	for (int i = 0; scalar_tags[i]; i++)
		if (strcmp(tag, scalar_tags[i]) == 0)
			return 1;
	return 0;
}

/* Hang node under the innermost open container (or make it the root). */
static int attach(struct ystate *s, struct xp_tree *node)
{
	if (s->depth == 0) {
		s->root = node;
		return 0;
	}
	struct frame *f = &s->stack[s->depth - 1];
	if (f->node->kind == XP_TREE_SEQ) {
		xp_tree_seq_add(f->node, node);
		return 0;
	}
	int rc = xp_tree_map_add(f->node, f->key, f->keylen, f->key_line, node);
	if (rc == XP_EEXIST)
		rc = yfail(s, f->key_line, 1, rc, "duplicate key");
	else if (rc < 0)
		rc = yfail(s, f->key_line, 0, rc, "more than %d keys in one map", XP_TREE_MAX_KEYS);
	free(f->key);
	f->key = NULL;
	return rc;
}

static int on_node(struct ystate *s, const yaml_event_t *ev)
{
	uint32_t line = (uint32_t)ev->start_mark.line + 1;
	const char *anchor = NULL, *tag = NULL;
	struct frame *top = s->depth ? &s->stack[s->depth - 1] : NULL;
	int wants_key = top && top->node->kind == XP_TREE_MAP && !top->key;

	if (ev->type == YAML_SCALAR_EVENT) {
		anchor = (const char *)ev->data.scalar.anchor;
		tag = (const char *)ev->data.scalar.tag;
	} else if (ev->type == YAML_SEQUENCE_START_EVENT) {
		anchor = (const char *)ev->data.sequence_start.anchor;
		tag = (const char *)ev->data.sequence_start.tag;
	} else {
		anchor = (const char *)ev->data.mapping_start.anchor;
		tag = (const char *)ev->data.mapping_start.tag;
	}
	if (anchor)
		return yfail(s, line, 1, XP_EUNSUPP, "anchors and aliases are not supported (&%s)",
			     XP_SHOW(anchor));
	if (!tag_ok(tag, ev->type))
		return yfail(s, line, 1, XP_EUNSUPP, "tag '%s' is not supported", XP_SHOW(tag));
	if (++s->nnodes > XP_TREE_MAX_NODES)
		return yfail(s, line, 0, XP_ETOOBIG, "more than %u values in one document",
			     XP_TREE_MAX_NODES);

	if (ev->type == YAML_SCALAR_EVENT) {
		const char *v = (const char *)ev->data.scalar.value;
		size_t len = ev->data.scalar.length;
		if (memchr(v, '\0', len))
			return yfail(s, line, 1, XP_EINVAL, "NUL byte in a value");
		if (wants_key) {
			top->key = xstrndup(v, len);
			top->keylen = len;
			top->key_line = line;
			return 0;
		}
		int quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
			     (tag && strcmp(tag, "tag:yaml.org,2002:str") == 0);
		return attach(s, xp_tree_new_scalar(v, len, quoted, line));
	}

	if (wants_key)
		return yfail(s, line, 1, XP_EUNSUPP, "a map key must be a plain value");
	if (s->depth >= XP_TREE_MAX_DEPTH)
		return yfail(s, line, 1, XP_ETOOBIG, "nested deeper than %d levels",
			     XP_TREE_MAX_DEPTH);
	struct xp_tree *node =
		xp_tree_new(ev->type == YAML_MAPPING_START_EVENT ? XP_TREE_MAP : XP_TREE_SEQ, line);
	int rc = attach(s, node);
	if (rc < 0)
		return rc;
	s->stack[s->depth].node = node;
	s->stack[s->depth].key = NULL;
	s->depth++;
	return 0;
}

/* One event; 1 at the end of the stream. */
static int on_event(struct ystate *s, const yaml_event_t *ev)
{
	uint32_t line = (uint32_t)ev->start_mark.line + 1;

	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++s->ndocs > 1)
			return yfail(s, line, 0, XP_EUNSUPP,
				     "only one YAML document is allowed per descriptor");
		return 0;
	case YAML_ALIAS_EVENT:
		return yfail(s, line, 1, XP_EUNSUPP, "anchors and aliases are not supported (*%s)",
			     XP_SHOW((const char *)ev->data.alias.anchor));
	case YAML_SCALAR_EVENT:
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		return on_node(s, ev);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (s->depth > 0)
			s->depth--;
		return 0;
	case YAML_STREAM_END_EVENT:
		return 1;
	default:
		return 0;
	}
}

int xp_tree_from_yaml(const char *name, const char *buf, size_t len, struct xp_tree **out,
		      char field[320], struct xp_err *err)
{
	struct ystate *s = XNEW(struct ystate);
	yaml_parser_t p;
	int rc = 0;

	s->w.name = name;
	s->w.err = err;
	if (!yaml_parser_initialize(&p)) {
		free(s);
		return xp_errf(err, XP_EINTERNAL, "%s: cannot start the YAML parser", name);
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	while (rc == 0) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			rc = syntax_error(s, &p);
			break;
		}
		rc = on_event(s, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	for (int i = 0; i < s->depth; i++)
		free(s->stack[i].key);
	if (rc < 0) {
		if (field)
			memcpy(field, s->w.field, sizeof(s->w.field));
		xp_tree_destroy(s->root);
	} else {
		*out = s->root;
		rc = 0;
	}
	free(s);
	return rc;
}
