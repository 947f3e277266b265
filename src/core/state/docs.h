/*
 * docs: the edge's document code the state is given at creation
 * (xp_state_opts.docs; edge.h: xp_edge_docs), so the state layer includes
 * no JSON, document tree, YAML or descriptor code. The readers - a job's
 * spec, a queue, a service, the price table, a node's descriptor, a
 * running job's allocations - are the edge's snapshot reader's
 * (src/edge/snapshot.c, which reads them through st->docs; records'
 * documents are read by the record codec, src/edge/codec.c, before they
 * reach the state). The state itself calls the last two entries: the hash
 * of a spec's canonical JSON and the new-version test of a service.
 *
 * Each reader has the edge parser's signature; json is always 1 here
 * (snapshots hold canonical JSON). xp_state_create refuses options
 * without the table.
 */
#ifndef XP_STATE_DOCS_H
#define XP_STATE_DOCS_H

#include <stddef.h>
#include <stdint.h>

#include "../../lib/err.h"

struct xp_jobspec;
struct xp_queuespec;
struct xp_servicespec;
struct xp_prices;
struct xp_cluster;
struct xp_rec_alloc;

struct xp_state_docs {
	int (*jobspec)(const char *name, const char *buf, size_t len, int json,
		       struct xp_jobspec *out, char field[320], struct xp_err *err);
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
	/* a list of allocations (JSON) into *out (malloc'd with the node names
	 * it points to, one free; *n of them), each checked for form as a
	 * record's are (the record codec's reader) */
	int (*allocs)(const char *buf, size_t len, struct xp_rec_alloc **out, size_t *n,
		      struct xp_err *err);
	/* the hash of a spec's canonical JSON (job.submit's idempotency key) */
	uint64_t (*jobspec_hash)(const struct xp_jobspec *s);
	/* would replicas of a and b differ (their canonical JSON)? then a
	 * service.update is a new version, rolled out */
	int (*service_new_version)(const struct xp_servicespec *a,
				   const struct xp_servicespec *b);
};

#endif
