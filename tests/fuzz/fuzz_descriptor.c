/*
 * fuzz_descriptor: cluster descriptors (docs/descriptor.md) read by
 * xp_descriptor_load_buf as YAML, JSON or by content.
 *
 * Checks: an accepted descriptor gives a cluster whose node names are
 * distinct and non-empty, whose nodes hold at most XP_MAX_NODE_DEVS
 * devices of known classes with links to devices of the node (or off-node);
 * its JSON (xp_descriptor_to_json) loads again into a cluster that writes
 * the same JSON. A refusal leaves a text naming the document.
 */
#include <stdlib.h>
#include <string.h>

#include "descriptor/descriptor.h"
#include "fuzz.h"

static void check_cluster(const struct xp_cluster *c)
{
	for (size_t i = 0; i < c->nnodes; i++) {
		const struct xp_node *n = &c->nodes[i];
		FZ_CHECK(n->name && n->name[0], "node %zu has no name", i);
		FZ_CHECK(xp_cluster_find_node(c, n->name) == (long)i, "node %s listed twice",
			 n->name);
		FZ_CHECK(n->ndevs <= XP_MAX_NODE_DEVS, "node %s has %u devices", n->name, n->ndevs);
		for (uint16_t d = 0; d < n->ndevs; d++) {
			const struct xp_device *dev = &n->devs[d];
			FZ_CHECK(dev->cls < XP_CLASS_N, "%s device %u: class %u", n->name, d,
				 dev->cls);
			for (uint16_t l = 0; l < dev->nlinks; l++)
				FZ_CHECK(dev->links[l].kind < XP_LINK_N &&
						 dev->links[l].peer >= -1 &&
						 dev->links[l].peer < (int)n->ndevs,
					 "%s device %u: link %u to %d", n->name, d, l,
					 dev->links[l].peer);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum xp_desc_format fmt[] = { XP_DESC_YAML, XP_DESC_JSON };
	struct xp_err err = { 0 };
	int json;

	fz_mode(&data, &size, &json, NULL);
	struct xp_cluster *c = xp_descriptor_load_buf(
		"input", (const char *)data, size, json < 0 ? XP_DESC_AUTO : fmt[json], &err);
	if (!c) {
		fz_check_refused(err.code, &err, "input");
		return 0;
	}
	check_cluster(c);
	char *j1 = xp_descriptor_to_json(c);
	struct xp_cluster *again =
		xp_descriptor_load_buf("canonical", j1, strlen(j1), XP_DESC_JSON, &err);
	FZ_CHECK(again, "its own JSON is refused: %s\n%s", err.text, j1);
	char *j2 = xp_descriptor_to_json(again);
	FZ_CHECK(!strcmp(j1, j2), "JSON changed on a round trip:\n%s\n%s", j1, j2);
	FZ_CHECK(again->nnodes == c->nnodes, "%zu nodes became %zu", c->nnodes, again->nnodes);
	free(j1);
	free(j2);
	xp_cluster_destroy(again);
	xp_cluster_destroy(c);
	return 0;
}
