/*
 * docs: the readers of the documents inside records and snapshots that
 * the state is given (src/core/state/docs.h) - the parsers of this folder
 * and the node descriptor's reader and writer (src/descriptor).
 */
#include "edge.h"

#include "../descriptor/descriptor.h"

static struct xp_cluster *nodes(const char *name, const char *buf, size_t len, struct xp_err *err)
{
	return xp_descriptor_load_buf(name, buf, len, XP_DESC_JSON, err);
}

const struct xp_state_docs xp_edge_docs = {
	.jobspec = xp_jobspec_parse_text,
	.queuespec = xp_queuespec_parse_text,
	.servicespec = xp_servicespec_parse_text,
	.prices = xp_prices_parse,
	.nodes = nodes,
	.nodes_json = xp_descriptor_to_json,
	.allocs = xp_rec_allocs_read,
	.jobspec_hash = xp_jobspec_hash,
	.service_new_version = xp_servicespec_new_version,
};
