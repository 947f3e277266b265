/*
 * fuzz_openb: the OpenB trace readers (src/sim/openb.h): a node list, a
 * NUL byte, a pod list (CSV holds no NUL, so the split is unambiguous).
 * Without a NUL the input is read as both. Pods are read against the
 * cluster of the node list, or a fixed one when that is refused; an
 * accepted trace then yields its target workload (xp_openb_workload).
 *
 * Checks: an accepted node list has distinct valid node names, GPU
 * devices with a model; an accepted trace is sorted by distinct pod names,
 * with fractions only on single-GPU pods; the workload's shares are
 * positive and sum to 1; a refusal carries its code and a text naming the
 * file.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sim/openb.h"

static const char fixed[] = "sn,cpu_milli,memory_mib,gpu,model\n"
			    "n1,96000,786432,8,V100M32\nn2,64000,262144,2,T4\nn3,32000,131072,0,\n";

static void check_nodes(const struct xp_cluster *c)
{
	FZ_CHECK(c->nnodes >= 1, "an empty cluster accepted");
	for (size_t i = 0; i < c->nnodes; i++) {
		const struct xp_node *n = &c->nodes[i];
		FZ_CHECK(n->name[0] && xp_cluster_find_node(c, n->name) == (long)i,
			 "node %zu '%s' empty or listed twice", i, n->name);
		for (uint16_t d = 0; d < n->ndevs; d++)
			FZ_CHECK(n->devs[d].cls == XP_CLASS_GPU && n->devs[d].model,
				 "node %s device %u is not a GPU with a model", n->name, d);
	}
}

static void check_trace(const struct xp_openb_trace *t)
{
	FZ_CHECK(t->n >= 1 && t->workload, "an empty trace accepted");
	for (size_t i = 0; i < t->n; i++) {
		const struct xp_openb_pod *p = &t->pods[i];
		FZ_CHECK(!i || strcmp(t->pods[i - 1].name, p->name) < 0, "pods not sorted at %zu", i);
		FZ_CHECK(p->num_gpu ? p->gpu_milli >= 1 && p->gpu_milli <= 1000 : !p->gpu_milli,
			 "pod %s: %u GPUs of %u milli", p->name, p->num_gpu, p->gpu_milli);
		FZ_CHECK(p->num_gpu <= 1 || p->gpu_milli == 1000, "pod %s: a fraction of %u GPUs",
			 p->name, p->num_gpu);
	}
	struct xp_wshape *m = NULL;
	size_t nm = 0;
	struct xp_err err = { 0 };
	FZ_CHECK(xp_openb_workload(t, &m, &nm, &err) == 0, "no workload: %s", err.text);
	double sum = 0;
	for (size_t i = 0; i < nm; i++) {
		FZ_CHECK(m[i].p > 0, "shape %zu has share %g", i, m[i].p);
		sum += m[i].p;
	}
	FZ_CHECK(nm >= 1 && nm <= t->n && fabs(sum - 1) < 1e-9, "%zu shapes summing to %.17g", nm,
		 sum);
	free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data, *nul = memchr(buf, '\0', size);
	size_t nlen = nul ? (size_t)(nul - buf) : size;
	const char *pods = nul ? nul + 1 : buf;
	size_t plen = nul ? size - nlen - 1 : size;
	struct xp_err err = { 0 };

	struct xp_cluster *c = xp_openb_parse_nodes("nodes", buf, nlen, &err);
	if (c)
		check_nodes(c);
	else
		fz_check_refused(err.code, &err, "nodes");
	if (!c)
		c = xp_openb_parse_nodes("fixed", fixed, sizeof(fixed) - 1, &err);
	FZ_CHECK(c, "the fixed node list is refused: %s", err.text);
	struct xp_openb_trace *t = xp_openb_parse_pods("openb_pod_list_x.csv", pods, plen, c, &err);
	if (t) {
		FZ_CHECK(!strcmp(t->workload, "x"), "workload '%s'", t->workload);
		check_trace(t);
	} else {
		fz_check_refused(err.code, &err, "openb_pod_list_x.csv");
	}
	xp_openb_trace_free(t);
	xp_cluster_destroy(c);
	return 0;
}
