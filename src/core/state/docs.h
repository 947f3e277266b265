/*
 * docs: the readers of the documents that records and snapshots carry
 * inside them - a job's spec, a job change, a queue, a service, the price
 * table, a node's descriptor - given to the state at creation
 * (xp_state_opts.docs) instead of parsers of its own. The parsers live at
 * the edge (src/edge), which fills this table (edge.h: xp_edge_docs), so
 * the state layer includes no document tree, YAML or descriptor code, and
 * what the API accepted is read back on replay by the very same parser.
 *
 * Each reader has the edge parser's signature; json is always 1 here
 * (records carry canonical JSON). A state created without the table
 * refuses records that carry a document (XP_EINTERNAL, naming it).
 *
 * This table is the stage before the record codec (issue 19): once
 * records reach the state decoded, its entries go with them.
 */
#ifndef XP_STATE_DOCS_H
#define XP_STATE_DOCS_H

#include <stddef.h>

#include "../../lib/err.h"

struct xp_jobspec;
struct xp_jobpatch;
struct xp_queuespec;
struct xp_servicespec;
struct xp_prices;
struct xp_cluster;

struct xp_state_docs {
	int (*jobspec)(const char *name, const char *buf, size_t len, int json,
		       struct xp_jobspec *out, char field[320], struct xp_err *err);
	int (*jobpatch)(const char *name, const char *buf, size_t len, int json,
			struct xp_jobpatch *out, char field[320], struct xp_err *err);
	int (*queuespec)(const char *name, const char *buf, size_t len, int json, int need_name,
			 struct xp_queuespec *out, char field[320], struct xp_err *err);
	int (*servicespec)(const char *name, const char *buf, size_t len, int json,
			   struct xp_servicespec *out, char field[320], struct xp_err *err);
	int (*prices)(const char *name, const char *text, size_t len, int json,
		      struct xp_prices *out, struct xp_err *err);
	/* a node descriptor document (JSON) into a new cluster, NULL on error */
	struct xp_cluster *(*nodes)(const char *name, const char *buf, size_t len,
				    struct xp_err *err);
	/* a cluster as a descriptor document (JSON, malloc'd) */
	char *(*nodes_json)(const struct xp_cluster *c);
};

#endif
