/*
 * descriptor: cluster descriptors in YAML or JSON, one schema
 * (docs/descriptor.md), read into and written from the resource model.
 *
 * Reading is two steps: a syntax reader (yaml_tree.c, json_tree.c) builds
 * a generic tree with line numbers, then one schema walker turns the tree
 * into a struct xp_cluster, checking every key, type and range. Unknown
 * keys are errors, never ignored. An error names the file, the line (YAML)
 * and the path of the field:
 *
 *   small.yaml:14: nodes[1].devices[0].memory: expected a size such as
 *   81920, 80Gi or 40GB (plain numbers are MiB), got '80Gx'
 *
 * Writing emits JSON in the same schema (explicit links, islands and
 * attributes; runs of identical devices and nodes folded into `count`
 * only where loading the folded form rebuilds the same structs) that loads
 * back into an equal cluster.
 *
 * Ownership: the load functions return a new cluster that the caller frees
 * with xp_cluster_destroy(); their inputs are borrowed.
 */
#ifndef XP_DESCRIPTOR_H
#define XP_DESCRIPTOR_H

#include <stddef.h>

#include "../core/model/model.h"
#include "../lib/err.h"

enum xp_desc_format { XP_DESC_AUTO, XP_DESC_YAML, XP_DESC_JSON };

/* Parse a descriptor into a NEW cluster. On error returns NULL and err names the
 * file, the line (YAML) and the path of the field
 * ("nodes[2].devices[0].memory: expected a size such as 80Gi").
 * fmt AUTO: by the name's extension (.json, .yaml, .yml), else by content
 * (first non-space byte '{' or '[' means JSON). err may be NULL. */
struct xp_cluster *xp_descriptor_load_file(const char *path, struct xp_err *err);
struct xp_cluster *xp_descriptor_load_buf(const char *name, const char *buf, size_t len,
					  enum xp_desc_format fmt, struct xp_err *err);
/* Serialise as JSON text (malloc'd, caller frees); load_buf of the result
 * gives an equal cluster. */
char *xp_descriptor_to_json(const struct xp_cluster *c);

#endif
