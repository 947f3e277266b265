/*
 * test_descriptor: the cluster descriptor (YAML and JSON, one schema).
 *
 * The product brief's example must load as written in both syntaxes; the
 * shipped example cluster must load with the expected counts; replication,
 * units and the writer's round trip are checked field by field; a table of
 * bad documents pins the error code, the field path and (YAML) the line;
 * a seeded mutation loop checks that no input crashes the readers.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "descriptor/descriptor.h"
#include "descriptor/tree.h"
#include "lib/rng.h"

static const char brief_yaml[] = "resources:\n"
				 "  - type: GPU\n"
				 "    vendor: NVIDIA\n"
				 "    compute_capability: \"8.0\"\n"
				 "    memory_bandwidth: 600GB/s\n"
				 "    interconnect: NVLink\n"
				 "  - type: DPU\n"
				 "    offload_engines: [storage, network, security]\n"
				 "    rdma_capability: 200Gbps\n";

static const char brief_json[] =
	"{\"resources\": [\n"
	"  {\"type\": \"GPU\", \"vendor\": \"NVIDIA\",\n"
	"   \"compute_capability\": \"8.0\",\n"
	"   \"memory_bandwidth\": \"600GB/s\", \"interconnect\": \"NVLink\"},\n"
	"  {\"type\": \"DPU\",\n"
	"   \"offload_engines\": [\"storage\", \"network\", \"security\"],\n"
	"   \"rdma_capability\": \"200Gbps\"}\n"
	"]}\n";

static struct xp_cluster *load(const char *name, const char *text)
{
	struct xp_err err = { 0 };
	struct xp_cluster *c = xp_descriptor_load_buf(name, text, strlen(text), XP_DESC_AUTO, &err);
	if (!c)
		fail_msg("%s did not load: %s", name, err.text);
	return c;
}

static const char *sym(const struct xp_cluster *c, xp_sym s)
{
	return xp_strtab_str(c->syms, s);
}

static const struct xp_node *node(const struct xp_cluster *c, const char *name)
{
	long i = xp_cluster_find_node(c, name);
	if (i < 0)
		fail_msg("no node %s", name);
	return &c->nodes[i];
}

static void check_brief(struct xp_cluster *c)
{
	assert_non_null(c);
	assert_int_equal(c->nnodes, 1);
	const struct xp_node *n = &c->nodes[0];
	assert_string_equal(n->name, "node-0");
	assert_int_equal(n->ndevs, 2);

	const struct xp_device *g = &n->devs[0];
	assert_int_equal(g->cls, XP_CLASS_GPU);
	assert_string_equal(sym(c, g->vendor), "NVIDIA");
	assert_int_equal(g->model, 0);
	assert_int_equal(g->cc, 800);
	assert_int_equal(g->mem_bw_mb_s, 600000);
	assert_int_equal(g->mem_mib, 0);
	assert_int_equal(g->health, XP_HEALTH_OK);
	assert_int_equal(g->island, -1);
	assert_int_equal(g->numa, -1);
	assert_int_equal(g->nlinks, 0); /* one device: no peers */
	assert_string_equal(xp_attrs_get(g->attrs, g->nattrs, "interconnect"), "NVLink");

	const struct xp_device *d = &n->devs[1];
	assert_int_equal(d->cls, XP_CLASS_DPU);
	assert_int_equal(d->vendor, 0);
	assert_string_equal(xp_attrs_get(d->attrs, d->nattrs, "offload_engines"),
			    "storage,network,security");
	assert_string_equal(xp_attrs_get(d->attrs, d->nattrs, "rdma_capability"), "200Gbps");
	assert_int_equal(d->nlinks, 1);
	assert_int_equal(d->links[0].kind, XP_LINK_RDMA);
	assert_int_equal(d->links[0].peer, -1);
	assert_int_equal(d->links[0].gbps, 200);
	xp_cluster_destroy(c);
}

static void test_brief_yaml(void **state)
{
	(void)state;
	char *path = xp_test_tmpfile(".yaml", brief_yaml);
	struct xp_err err = { 0 };
	assert_non_null(path);
	struct xp_cluster *c = xp_descriptor_load_file(path, &err);
	if (!c)
		fail_msg("%s", err.text);
	check_brief(c);
	unlink(path);
	free(path);
	/* a buffer with no telling name: YAML by content */
	check_brief(load("brief", brief_yaml));
}

static void test_brief_json(void **state)
{
	(void)state;
	char *path = xp_test_tmpfile(".json", brief_json);
	struct xp_err err = { 0 };
	assert_non_null(path);
	struct xp_cluster *c = xp_descriptor_load_file(path, &err);
	if (!c)
		fail_msg("%s", err.text);
	check_brief(c);
	unlink(path);
	free(path);
	check_brief(load("brief", brief_json)); /* JSON by content ('{') */
	c = xp_descriptor_load_buf("x", brief_json, strlen(brief_json), XP_DESC_JSON, &err);
	check_brief(c);
}

static void test_small_example(void **state)
{
	(void)state;
	struct xp_err err = { 0 };
	struct xp_cluster *c =
		xp_descriptor_load_file(XP_SOURCE_DIR "/examples/clusters/small.yaml", &err);
	if (!c)
		fail_msg("%s", err.text);
	assert_int_equal(c->nnodes, 12);
	assert_int_equal(xp_cluster_total_devices(c, -1), 45);
	assert_int_equal(xp_cluster_total_devices(c, XP_CLASS_GPU), 28);
	assert_int_equal(xp_cluster_total_devices(c, XP_CLASS_NPU), 12);
	assert_int_equal(xp_cluster_total_devices(c, XP_CLASS_FPGA), 2);
	assert_int_equal(xp_cluster_total_devices(c, XP_CLASS_DPU), 3);

	const struct xp_node *a = node(c, "gpu-a100-1");
	assert_int_equal(a->ndevs, 9);
	assert_int_equal(a->cpu_milli, 256000);
	assert_int_equal(a->mem_mib, 2 * 1024 * 1024);
	assert_int_equal(a->numa_domains, 2);
	assert_string_equal(sym(c, a->arch), "x86_64");
	assert_string_equal(sym(c, a->zone), "zone-a");
	assert_string_equal(sym(c, a->region), "cn-north-1");
	assert_string_equal(xp_attrs_get(a->labels, a->nlabels, "cluster"), "small-demo");
	assert_string_equal(xp_attrs_get(a->labels, a->nlabels, "rack"), "r01");
	for (int i = 0; i < 8; i++) {
		const struct xp_device *d = &a->devs[i];
		assert_string_equal(sym(c, d->model), "A100-SXM4-80GB");
		assert_int_equal(d->island, 0);
		assert_int_equal(d->nlinks, 7);
		assert_int_equal(d->mem_mib, 81920);
		assert_int_equal(d->peak_gflops[XP_PREC_FP16], 312000);
		assert_int_equal(d->nparts, 3);
	}
	assert_string_equal(a->devs[0].parts[0].name, "1g.10gb");
	assert_int_equal(a->devs[0].parts[0].compute_milli, 142);
	assert_int_equal(a->devs[0].parts[0].mem_mib, 10240);
	assert_int_equal(a->devs[0].parts[0].max_count, 7);
	assert_int_equal(a->devs[8].cls, XP_CLASS_DPU);
	assert_int_equal(a->devs[8].island, -1);

	const struct xp_node *h = node(c, "gpu-h100-0");
	for (int i = 0; i < 8; i++) {
		assert_int_equal(h->devs[i].island, i / 4);
		assert_int_equal(h->devs[i].numa, i / 4);
		assert_int_equal(h->devs[i].cc, 900);
		assert_int_equal(h->devs[i].mem_bw_mb_s, 3350000);
		assert_int_equal(h->devs[i].nlinks, 3);
		for (int l = 0; l < 3; l++)
			assert_int_equal(h->devs[h->devs[i].links[l].peer].island, i / 4);
	}
	const struct xp_node *npu = node(c, "npu-910b-0");
	assert_int_equal(npu->devs[0].cls, XP_CLASS_NPU);
	assert_string_equal(sym(c, npu->devs[0].vendor), "Huawei");
	assert_int_equal(npu->devs[0].links[0].kind, XP_LINK_HCCS);
	assert_string_equal(sym(c, npu->arch), "aarch64");
	const struct xp_node *mlu = node(c, "mlu370-0");
	assert_int_equal(mlu->devs[0].island, -1); /* PCIe is no island */
	assert_int_equal(mlu->devs[0].nlinks, 0);
	const struct xp_node *inf = node(c, "infer-l40s-0");
	assert_int_equal(inf->devs[4].cls, XP_CLASS_DPU);
	assert_int_equal(inf->devs[4].links[0].gbps, 400);
	assert_string_equal(inf->devs[4].pci_bus_id, "0000:c1:00.0");
	assert_int_equal(node(c, "cpu-arm-1")->cpu_milli, 79500);
	assert_int_equal(node(c, "cpu-x86-2")->ndevs, 0);
	assert_int_equal(xp_cluster_find_node(c, "cpu-x86"), -1);
	xp_cluster_destroy(c);
}

static void test_count_replication(void **state)
{
	(void)state;
	struct xp_cluster *c =
		load("rep.yaml", "nodes:\n"
				 "  - name: w\n"
				 "    count: 3\n"
				 "    devices:\n"
				 "      - {type: gpu, count: 4, interconnect: NVLink}\n"
				 "      - {type: gpu, count: 2, interconnect: [PCIe, xGMI]}\n"
				 "      - {type: gpu, count: 2, island: 7, interconnect: HCCS}\n"
				 "      - {type: fpga, count: 2}\n"
				 "  - name: solo\n");
	assert_int_equal(c->nnodes, 4);
	assert_string_equal(c->nodes[0].name, "w-0");
	assert_string_equal(c->nodes[2].name, "w-2");
	assert_string_equal(c->nodes[3].name, "solo");
	for (int k = 0; k < 3; k++) {
		const struct xp_node *n = &c->nodes[k];
		assert_int_equal(n->ndevs, 10);
		for (int i = 0; i < 4; i++) {
			assert_int_equal(n->devs[i].island, 0);
			assert_int_equal(n->devs[i].nlinks, 3);
			for (int l = 0, p = 0; l < 3; l++, p++) {
				p += p == i;
				assert_int_equal(n->devs[i].links[l].peer, p);
				assert_int_equal(n->devs[i].links[l].kind, XP_LINK_NVLINK);
			}
		}
		assert_int_equal(n->devs[4].island, 1);
		assert_int_equal(n->devs[4].links[0].kind, XP_LINK_XGMI);
		assert_int_equal(n->devs[4].links[0].peer, 5);
		assert_string_equal(
			xp_attrs_get(n->devs[4].attrs, n->devs[4].nattrs, "interconnect"),
			"PCIe,xGMI");
		assert_int_equal(n->devs[6].island, 7);
		assert_int_equal(n->devs[7].links[0].peer, 6);
		assert_int_equal(n->devs[8].island, -1);
		assert_int_equal(n->devs[9].nlinks, 0);
	}
	assert_int_equal(c->nodes[3].ndevs, 0);
	xp_cluster_destroy(c);
}

static void test_units(void **state)
{
	(void)state;
	struct xp_cluster *c =
		load("units.yaml",
		     "nodes:\n"
		     "  - {name: a, cpu: \"2.5\", memory: 512Gi, devices: [\n"
		     "      {type: gpu, memory: 80Gi, tdp: 0.7kW, idle_power: 60,\n"
		     "       memory_bandwidth: 2TB/s, peak: {fp64: 19.5T, int8: 624TOPS}},\n"
		     "      {type: gpu, memory: 40GB, memory_bandwidth: 900 GB/s},\n"
		     "      {type: npu, memory: 81920, compute_capability: 7.5},\n"
		     "      {type: dpu, memory: 512Mi, rdma_capability: 100Gb/s}]}\n"
		     "  - {name: b, cpu: 500m, memory: 1024}\n"
		     "  - {name: c, cpu: 128}\n");
	assert_int_equal(c->nodes[0].cpu_milli, 2500);
	assert_int_equal(c->nodes[0].mem_mib, 512 * 1024);
	assert_int_equal(c->nodes[1].cpu_milli, 500);
	assert_int_equal(c->nodes[1].mem_mib, 1024);
	assert_int_equal(c->nodes[2].cpu_milli, 128000);
	const struct xp_device *d = c->nodes[0].devs;
	assert_int_equal(d[0].mem_mib, 81920);
	assert_int_equal(d[0].tdp_w, 700);
	assert_int_equal(d[0].idle_w, 60);
	assert_int_equal(d[0].mem_bw_mb_s, 2000000);
	assert_int_equal(d[0].peak_gflops[XP_PREC_FP64], 19500);
	assert_int_equal(d[0].peak_gflops[XP_PREC_INT8], 624000);
	assert_int_equal(d[1].mem_mib, 38147); /* 40e9 bytes, to the nearest MiB */
	assert_int_equal(d[1].mem_bw_mb_s, 900000);
	assert_int_equal(d[2].mem_mib, 81920);
	assert_int_equal(d[2].cc, 750);
	assert_int_equal(d[3].mem_mib, 512);
	assert_int_equal(d[3].links[0].gbps, 100);
	xp_cluster_destroy(c);

	/* the same numbers from JSON numbers (no quotes) */
	c = load("units.json", "{\"nodes\": [{\"name\": \"a\", \"cpu\": 2.5, \"memory\": 1024,"
			       " \"devices\": [{\"type\": \"gpu\", \"compute_capability\": 8.6,"
			       " \"memory\": 40960, \"tdp\": 300}]}]}");
	assert_int_equal(c->nodes[0].cpu_milli, 2500);
	assert_int_equal(c->nodes[0].devs[0].cc, 860);
	assert_int_equal(c->nodes[0].devs[0].mem_mib, 40960);
	assert_int_equal(c->nodes[0].devs[0].tdp_w, 300);
	xp_cluster_destroy(c);
}

/* ---- bad inputs ---- */

struct bad {
	const char *name; /* .yaml / .json picks the reader */
	const char *text;
	int code;	   /* expected code; 0: any negative */
	const char *want1; /* substrings the error text must hold */
	const char *want2;
};

#define NODE_A "nodes:\n  - name: a\n"
#define DEV    NODE_A "    devices:\n      - type: gpu\n"

static const struct bad bads[] = {
	{ "t.yaml", NODE_A "  - name: b\n    devices:\n      - type: gpu\n        memory: 80Gx\n",
	  XP_EINVAL, "t.yaml:6: nodes[1].devices[0].memory: expected a size such as 81920",
	  "got '80Gx'" },
	{ "t.yaml", NODE_A "    colour: red\n", XP_EINVAL, "t.yaml:3: nodes[0].colour: unknown key",
	  "expected one of: name, count" },
	{ "t.yaml", NODE_A "    Memory: 1Gi\n", XP_EINVAL, "t.yaml:3: nodes[0].Memory",
	  "did you mean 'memory'" },
	{ "t.yaml", NODE_A "  - name: a\n", XP_EEXIST, "t.yaml:3: nodes[1].name",
	  "more than once" },
	{ "t.yaml", NODE_A "    count: 2\n  - name: a-1\n", XP_EEXIST, "t.yaml:4: nodes[1].name",
	  "'a-1'" },
	{ "t.yaml", "nodes:\n  - name: 'a b'\n", XP_EINVAL, "t.yaml:2: nodes[0].name",
	  "invalid node name" },
	{ "t.yaml", "nodes:\n  - cpu: 4\n", XP_EINVAL, "t.yaml:2: nodes[0]: missing 'name'", NULL },
	{ "t.yaml", NODE_A "    cpu: four\n", XP_EINVAL, "t.yaml:3: nodes[0].cpu: expected cores",
	  "got 'four'" },
	{ "t.yaml", NODE_A "    cpu: {n: 4}\n", XP_EINVAL, "t.yaml:3: nodes[0].cpu", "got a map" },
	{ "t.yaml", NODE_A "    memory: 99999999999Ti\n", XP_ERANGE, "t.yaml:3: nodes[0].memory",
	  "out of range" },
	{ "t.yaml", NODE_A "    count: 0\n", XP_ERANGE, "t.yaml:3: nodes[0].count", "1..100000" },
	{ "t.yaml", NODE_A "    count: 99999999999999999999999\n", XP_ERANGE,
	  "t.yaml:3: nodes[0].count", NULL },
	{ "t.yaml", NODE_A "    numa_domains: -2\n", XP_ERANGE, "t.yaml:3: nodes[0].numa_domains",
	  NULL },
	{ "t.yaml", NODE_A "    labels: [a, b]\n", XP_EINVAL, "t.yaml:3: nodes[0].labels",
	  "expected a map, got a list" },
	{ "t.yaml", NODE_A "    labels: {x: [1, 2]}\n", XP_EINVAL, "t.yaml:3: nodes[0].labels.x",
	  NULL },
	{ "t.yaml", NODE_A "    devices: {type: gpu}\n", XP_EINVAL, "t.yaml:3: nodes[0].devices",
	  "expected a list" },
	{ "t.yaml", NODE_A "    devices:\n      - vendor: x\n", XP_EINVAL,
	  "t.yaml:4: nodes[0].devices[0]: missing 'type'", NULL },
	{ "t.yaml", NODE_A "    devices:\n      - type: xpu\n", XP_EINVAL,
	  "t.yaml:4: nodes[0].devices[0].type", "'xpu'" },
	{ "t.yaml", DEV "        class: npu\n", XP_EINVAL, "t.yaml:5: nodes[0].devices[0].class",
	  "another name" },
	{ "t.yaml", DEV "        compute_capability: 8.x\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].compute_capability", "got '8.x'" },
	{ "t.yaml", DEV "        compute_capability: 8.123\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].compute_capability", NULL },
	{ "t.yaml", DEV "        memory_bandwidth: 600\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].memory_bandwidth", "byte rate" },
	{ "t.yaml", DEV "        interconnect: [NVLink, Warp]\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].interconnect[1]", "'Warp'" },
	{ "t.yaml", DEV "        count: 65\n", XP_ERANGE, "t.yaml:5: nodes[0].devices[0].count",
	  NULL },
	{ "t.yaml", DEV "        count: 40\n      - type: gpu\n        count: 30\n", XP_ERANGE,
	  "t.yaml:7: nodes[0].devices[1].count", "70 devices" },
	{ "t.yaml", DEV "        count: 2\n        uuid: GPU-1\n", XP_EINVAL,
	  "t.yaml:6: nodes[0].devices[0].uuid", "count > 1" },
	{ "t.yaml", DEV "        peak: {fp4: 1PFLOPS}\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].peak.fp4", "unknown precision" },
	{ "t.yaml", DEV "        peak: {fp16: 312}\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].peak.fp16", "throughput" },
	{ "t.yaml", DEV "        health: sick\n", XP_EINVAL, "t.yaml:5: nodes[0].devices[0].health",
	  "'sick'" },
	{ "t.yaml", DEV "        mode: sliced\n", XP_EINVAL, "t.yaml:5: nodes[0].devices[0].mode",
	  "shared, whole, timeslice or mig" },
	{ "t.yaml", DEV "        timeslice: {replicas: 0}\n", XP_ERANGE,
	  "t.yaml:5: nodes[0].devices[0].timeslice.replicas", NULL },
	{ "t.yaml", DEV "        timeslice: {replicas: 33}\n", XP_ERANGE,
	  "t.yaml:5: nodes[0].devices[0].timeslice.replicas", NULL },
	{ "t.yaml", DEV "        timeslice: {replicas: four}\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].timeslice.replicas", NULL },
	{ "t.yaml", DEV "        timeslice: {slices: 4}\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].timeslice.slices", NULL },
	{ "t.yaml", DEV "        timeslice: {}\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].timeslice", "missing 'replicas'" },
	{ "t.yaml", DEV "        timeslice: 4\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].timeslice", "{replicas: 4}" },
	{ "t.yaml", DEV "        mode: whole\n        timeslice: {replicas: 4}\n", XP_EINVAL,
	  "nodes[0].devices[0].timeslice", "not whole" },
	{ "t.yaml", DEV "        overcommit: {memory: 0.5}\n", XP_ERANGE,
	  "t.yaml:5: nodes[0].devices[0].overcommit.memory", "from 1 to 10" },
	{ "t.yaml", DEV "        overcommit: {memory: 11}\n", XP_ERANGE,
	  "t.yaml:5: nodes[0].devices[0].overcommit.memory", "'11'" },
	{ "t.yaml", DEV "        overcommit: {compute: 2}\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].overcommit.compute", NULL },
	{ "t.yaml", DEV "        overcommit: 1.5\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].overcommit", "{memory: 1.5}" },
	{ "t.yaml", DEV "        partitions:\n          - {name: p, compute_milli: 1001}\n",
	  XP_ERANGE, "t.yaml:6: nodes[0].devices[0].partitions[0].compute_milli", NULL },
	{ "t.yaml", DEV "        partitions:\n          - {name: p}\n", XP_EINVAL,
	  "t.yaml:6: nodes[0].devices[0].partitions[0]", "compute_milli" },
	{ "t.yaml", DEV "        links:\n          - {kind: nvlink, peer: 3}\n", XP_EINVAL,
	  "t.yaml:6: nodes[0].devices[0].links[0].peer", "does not exist" },
	{ "t.yaml", DEV "        links:\n          - {kind: nvlink, peer: 0}\n", XP_EINVAL,
	  "t.yaml:6: nodes[0].devices[0].links[0].peer", "itself" },
	{ "t.yaml", DEV "        rdma_capability: fast\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].rdma_capability", "bit rate" },
	{ "t.yaml", DEV "        attributes: {a: {b: c}}\n", XP_EINVAL,
	  "t.yaml:5: nodes[0].devices[0].attributes.a", "got a map" },
	{ "t.yaml", DEV "        type: npu\n", XP_EEXIST, "t.yaml:5: nodes[0].devices[0].type",
	  "duplicate key" },
	{ "t.yaml", "version: 2\nnodes: []\n", XP_EVERSION, "t.yaml:1: version", "not supported" },
	{ "t.yaml", "cpu: 4\nnodes: []\n", XP_EINVAL, "t.yaml:1: cpu", "'resources'" },
	{ "t.yaml", "nodes: []\nextra: 1\n", XP_EINVAL, "t.yaml:2: extra: unknown key", NULL },
	{ "t.yaml", "name: x\n", XP_EINVAL, "'nodes'", "'resources'" },
	{ "t.yaml", "name: a\nresources: []\nnodes: [{name: a}]\n", XP_EEXIST,
	  "t.yaml:3: nodes[0].name", NULL },
	{ "t.yaml", "42\n", XP_EINVAL, "t.yaml:1: expected a map", NULL },
	{ "t.yaml", "- a\n", XP_EINVAL, "t.yaml:1: expected a map", "got a list" },
	{ "t.yaml", "", XP_EINVAL, "t.yaml: empty descriptor", NULL },
	{ "t.yaml", "nodes: &n []\n", XP_EUNSUPP, "t.yaml:1: nodes: anchors", NULL },
	{ "t.yaml", "nodes: !!set {}\n", XP_EUNSUPP, "t.yaml:1: nodes: tag", NULL },
	{ "t.yaml", "--- {}\n--- {}\n", XP_EUNSUPP, "t.yaml:2:", "one YAML document" },
	{ "t.yaml", "nodes:\n  - name: a\n  devices: [\n", XP_EINVAL, "t.yaml:3:", "YAML syntax" },
	{ "t.yaml",
	  "nodes: [{name: a, count: 100000}, {name: b, count: 100000}, "
	  "{name: c, count: 100000}, {name: d, count: 100000}, {name: e, count: 100000}, "
	  "{name: f, count: 100000}, {name: g, count: 100000}, {name: h, count: 100000}, "
	  "{name: i, count: 100000}, {name: j, count: 100000}, {name: k}]\n",
	  XP_ETOOBIG, "t.yaml:1: nodes[10]", "more than 1000000 nodes" },
	{ "t.json",
	  "{\"nodes\": [{\"name\": \"a\", \"devices\": [{\"type\": \"gpu\", "
	  "\"memory\": \"80Gx\"}]}]}",
	  XP_EINVAL, "t.json: nodes[0].devices[0].memory: expected a size", "'80Gx'" },
	{ "t.json", "{\"nodes\": [{\"name\": \"a\", \"name\": \"b\"}]}", XP_EINVAL,
	  "t.json:1:", "duplicate" },
	{ "t.json", "{\"nodes\": [}", XP_EINVAL, "t.json:1:", "JSON syntax error" },
	{ "t.json", "{\"nodes\": [{\"name\": \"a\", \"cpu\": 1e999}]}", XP_EINVAL,
	  "t.json:1:", NULL },
	{ "t.json", "{\"nodes\": [{\"name\": \"a\", \"count\": 1.5}]}", XP_EINVAL,
	  "t.json: nodes[0].count", "got '1.5'" },
	{ "t.json", "{\"nodes\": [{\"name\": \"a\", \"numa_domains\": true}]}", XP_EINVAL,
	  "t.json: nodes[0].numa_domains", "got 'true'" },
	{ "t.json", "\"nodes\"", XP_EINVAL, "t.json: expected a map", "got a string" },
	{ "t.json", "{\"nodes\": [{\"name\": \"a\\u0000b\"}]}", XP_EINVAL, "t.json:1:", NULL },
};

static void test_bad_inputs(void **state)
{
	(void)state;
	size_t n = sizeof(bads) / sizeof(bads[0]);
	assert_true(n >= 25);
	for (size_t i = 0; i < n; i++) {
		const struct bad *b = &bads[i];
		struct xp_err err = { 0 };
		struct xp_cluster *c = xp_descriptor_load_buf(b->name, b->text, strlen(b->text),
							      XP_DESC_AUTO, &err);
		if (c) {
			xp_cluster_destroy(c);
			fail_msg("bad input %zu loaded:\n%s", i, b->text);
		}
		if (err.code >= 0 || (b->code && err.code != b->code))
			fail_msg("bad input %zu: code %d (%s), want %d; text: %s", i, err.code,
				 xp_errname(err.code), b->code, err.text);
		if (!strstr(err.text, b->want1) || (b->want2 && !strstr(err.text, b->want2)))
			fail_msg("bad input %zu: error text\n  %s\nlacks '%s' / '%s'", i, err.text,
				 b->want1, b->want2 ? b->want2 : "");
	}
}

/* Inputs that must fail cleanly without a table entry's precision. */
static void test_hostile_inputs(void **state)
{
	(void)state;
	struct xp_err err;
	char *deep = malloc(200001);
	assert_non_null(deep);

	/* deep nesting, both syntaxes */
	for (int json = 0; json < 2; json++) {
		memset(deep, json ? '[' : '[', 100000);
		memset(deep + 100000, ']', 100000);
		deep[200000] = '\0';
		assert_null(xp_descriptor_load_buf(json ? "d.json" : "d.yaml", deep, 200000,
						   XP_DESC_AUTO, &err));
		assert_true(err.code < 0 && err.text[0]);
	}
	memcpy(deep, "a: ", 3);
	for (int i = 0; i < 100; i++)
		memcpy(deep + 3 + i * 4, "{b: ", 4);
	assert_null(xp_descriptor_load_buf("d.yaml", deep, 403, XP_DESC_YAML, &err));
	assert_non_null(strstr(err.text, "nested deeper"));
	free(deep);

	/* NUL bytes and binary garbage */
	static const char nul_yaml[] = "nodes:\n  - name: a\0b\n";
	assert_null(xp_descriptor_load_buf("n.yaml", nul_yaml, sizeof(nul_yaml) - 1, XP_DESC_AUTO,
					   &err));
	assert_true(err.code < 0);
	static const char nul_json[] = "{\"nodes\": [{\"name\": \"a\0\"}]}";
	assert_null(xp_descriptor_load_buf("n.json", nul_json, sizeof(nul_json) - 1, XP_DESC_AUTO,
					   &err));
	assert_true(err.code < 0);
	char bin[4096];
	struct xp_rng r;
	xp_rng_seed(&r, 7);
	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (char)xp_rng_next(&r);
	for (int f = 0; f < 3; f++) {
		assert_null(xp_descriptor_load_buf("bin", bin, sizeof(bin), (enum xp_desc_format)f,
						   &err));
		assert_true(err.code < 0 && err.text[0]);
	}

	/* empty and missing inputs; err may be NULL */
	assert_null(xp_descriptor_load_buf(NULL, NULL, 0, XP_DESC_AUTO, &err));
	assert_int_equal(err.code, XP_EINVAL);
	assert_null(xp_descriptor_load_buf("e.json", "", 0, XP_DESC_AUTO, &err));
	assert_true(err.code < 0);
	assert_null(xp_descriptor_load_buf("e.yaml", "   \n# only a comment\n", 21, XP_DESC_AUTO,
					   NULL));
	assert_null(xp_descriptor_load_file("/nonexistent/cluster.yaml", &err));
	assert_int_equal(err.code, -2); /* -ENOENT */
	assert_non_null(strstr(err.text, "/nonexistent/cluster.yaml"));

	/* huge numbers */
	const char *huge[] = {
		"nodes: [{name: a, cpu: 1e308}]",
		"nodes: [{name: a, memory: 18446744073709551616}]",
		"nodes: [{name: a, devices: [{type: gpu, tdp: 5000000000W}]}]",
		"nodes: [{name: a, devices: [{type: gpu, peak: {fp8: 1e30T}}]}]",
		"nodes: [{name: a, devices: [{type: gpu, island: 40000}]}]",
		"nodes: [{name: a, devices: [{type: gpu, rdma_capability: 1e20Tbps}]}]",
		"{\"nodes\": [{\"name\": \"a\", \"memory\": 123456789012345678901234567890}]}",
	};
	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		assert_null(
			xp_descriptor_load_buf("h", huge[i], strlen(huge[i]), XP_DESC_AUTO, &err));
		assert_true(err.code < 0 && err.text[0]);
	}

	/* a long name, too long for any path buffer */
	char longname[600];
	memset(longname, 'x', sizeof(longname));
	memcpy(longname, "nodes: [{name: ", 15);
	memcpy(longname + sizeof(longname) - 3, "}]", 3);
	assert_null(
		xp_descriptor_load_buf("l.yaml", longname, strlen(longname), XP_DESC_AUTO, &err));
	assert_non_null(strstr(err.text, "invalid node name"));
}

/* ---- round trip ---- */

static void assert_attrs_equal(const struct xp_attr *a, uint16_t na, const struct xp_attr *b,
			       uint16_t nb)
{
	assert_int_equal(na, nb);
	for (uint16_t i = 0; i < na; i++) {
		assert_string_equal(a[i].key, b[i].key);
		assert_string_equal(a[i].value, b[i].value);
	}
}

static void assert_opt_str_equal(const char *a, const char *b)
{
	assert_string_equal(a ? a : "", b ? b : "");
}

static void assert_devices_equal(const struct xp_cluster *ca, const struct xp_device *a,
				 const struct xp_cluster *cb, const struct xp_device *b)
{
	assert_int_equal(a->cls, b->cls);
	assert_int_equal(a->health, b->health);
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->mem_overcommit, b->mem_overcommit);
	assert_string_equal(sym(ca, a->vendor), sym(cb, b->vendor));
	assert_string_equal(sym(ca, a->model), sym(cb, b->model));
	assert_string_equal(sym(ca, a->arch), sym(cb, b->arch));
	assert_int_equal(a->cc, b->cc);
	assert_int_equal(a->mem_mib, b->mem_mib);
	assert_int_equal(a->mem_bw_mb_s, b->mem_bw_mb_s);
	assert_memory_equal(a->peak_gflops, b->peak_gflops, sizeof(a->peak_gflops));
	assert_int_equal(a->tdp_w, b->tdp_w);
	assert_int_equal(a->idle_w, b->idle_w);
	assert_int_equal(a->numa, b->numa);
	assert_int_equal(a->island, b->island);
	assert_opt_str_equal(a->uuid, b->uuid);
	assert_opt_str_equal(a->pci_bus_id, b->pci_bus_id);
	assert_int_equal(a->nlinks, b->nlinks);
	for (uint16_t i = 0; i < a->nlinks; i++) {
		assert_int_equal(a->links[i].kind, b->links[i].kind);
		assert_int_equal(a->links[i].peer, b->links[i].peer);
		assert_int_equal(a->links[i].gbps, b->links[i].gbps);
	}
	assert_int_equal(a->nparts, b->nparts);
	for (uint16_t i = 0; i < a->nparts; i++) {
		assert_string_equal(a->parts[i].name, b->parts[i].name);
		assert_int_equal(a->parts[i].compute_milli, b->parts[i].compute_milli);
		assert_int_equal(a->parts[i].mem_mib, b->parts[i].mem_mib);
		assert_int_equal(a->parts[i].max_count, b->parts[i].max_count);
	}
	assert_attrs_equal(a->attrs, a->nattrs, b->attrs, b->nattrs);
}

static void assert_clusters_equal(const struct xp_cluster *a, const struct xp_cluster *b)
{
	assert_int_equal(a->nnodes, b->nnodes);
	for (size_t i = 0; i < a->nnodes; i++) {
		const struct xp_node *x = &a->nodes[i], *y = &b->nodes[i];
		assert_string_equal(x->name, y->name);
		assert_int_equal(x->cpu_milli, y->cpu_milli);
		assert_int_equal(x->mem_mib, y->mem_mib);
		assert_string_equal(sym(a, x->arch), sym(b, y->arch));
		assert_string_equal(sym(a, x->zone), sym(b, y->zone));
		assert_string_equal(sym(a, x->region), sym(b, y->region));
		assert_int_equal(x->numa_domains, y->numa_domains);
		assert_attrs_equal(x->labels, x->nlabels, y->labels, y->nlabels);
		assert_int_equal(x->ndevs, y->ndevs);
		for (uint16_t d = 0; d < x->ndevs; d++)
			assert_devices_equal(a, &x->devs[d], b, &y->devs[d]);
	}
}

static void round_trip(struct xp_cluster *c)
{
	char *json = xp_descriptor_to_json(c);
	assert_non_null(json);
	struct xp_cluster *back = load("round-trip.json", json);
	assert_clusters_equal(c, back);
	char *again = xp_descriptor_to_json(back);
	assert_string_equal(json, again); /* a fixed point */
	free(json);
	free(again);
	xp_cluster_destroy(back);
	xp_cluster_destroy(c);
}

/* mode and memory overcommit: a device's own factor wins over its node's */
static void test_mode_overcommit(void **state)
{
	(void)state;
	struct xp_cluster *c =
		load("oc.yaml", "nodes:\n"
				"  - name: a\n"
				"    overcommit: {memory: 1.5}\n"
				"    devices:\n"
				"      - {type: gpu, memory: 80Gi, mode: timeslice}\n"
				"      - {type: gpu, memory: 80Gi, overcommit: {memory: 1.25}}\n"
				"      - {type: gpu, memory: 80Gi, timeslice: {replicas: 4}}\n"
				"  - name: b\n"
				"    devices: [{type: gpu, memory: 80Gi, mode: Whole}]\n");
	const struct xp_device *d = c->nodes[0].devs;
	assert_int_equal(d[0].mode, XP_MODE_TIMESLICE);
	assert_int_equal(d[0].mem_overcommit, 150);
	assert_int_equal(xp_dev_admit_mib(&d[0]), 122880);
	assert_int_equal(d[1].mem_overcommit, 125);
	assert_int_equal(d[1].mode, XP_MODE_SHARED);
	assert_int_equal(d[1].replicas, 0);
	assert_int_equal(d[2].mode, XP_MODE_TIMESLICE); /* implied by its replicas */
	assert_int_equal(d[2].replicas, 4);
	d = c->nodes[1].devs;
	assert_int_equal(d[0].mode, XP_MODE_WHOLE);
	assert_int_equal(d[0].mem_overcommit, 0);
	assert_int_equal(xp_dev_admit_mib(&d[0]), 81920);
	/* a server's rules: model over class over the bare factor, never over a
	 * device's or node's own */
	struct xp_oc_rules r;
	struct xp_err err = { 0 };
	assert_int_equal(xp_oc_rules_parse("1.1,npu=1.3,a100-sxm4-80GB=2,gpu=1.5", &r, &err), 0);
	assert_int_equal(r.n, 4);
	struct xp_cluster *k = load("k.yaml", "nodes:\n"
					      "  - name: k\n"
					      "    devices:\n"
					      "      - {type: gpu, model: A100-SXM4-80GB}\n"
					      "      - {type: gpu, model: H100}\n"
					      "      - {type: npu}\n"
					      "      - {type: fpga}\n"
					      "      - {type: cpu}\n"
					      "      - {type: gpu, overcommit: {memory: 1.2}}\n");
	xp_oc_rules_apply(&r, k, &k->nodes[0]);
	static const uint16_t want[] = { 200, 150, 130, 110, 0, 120 };
	for (int i = 0; i < 6; i++)
		assert_int_equal(k->nodes[0].devs[i].mem_overcommit, want[i]);
	xp_cluster_destroy(k);
	static const char *const bad[][2] = { { "0.9", "'0.9': expected a factor from 1 to 10" },
					      { "gpu=11", "'gpu=11'" },
					      { "cpu=2", "CPUs have no device memory" },
					      { "=2", "expected a class or model" },
					      { "gpu=1.5,,", "expected F, CLASS=F or MODEL=F" },
					      { "gpu=x", "expected a factor" } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_true(xp_oc_rules_parse(bad[i][0], &r, &err) < 0);
		if (!strstr(err.text, bad[i][1]))
			fail_msg("%s: '%s'", bad[i][0], err.text);
	}
	xp_cluster_destroy(c);
}

static void test_round_trip(void **state)
{
	(void)state;
	struct xp_err err = { 0 };
	struct xp_cluster *c =
		xp_descriptor_load_file(XP_SOURCE_DIR "/examples/clusters/small.yaml", &err);
	if (!c)
		fail_msg("%s", err.text);
	round_trip(c);
	round_trip(load("brief.yaml", brief_yaml));
	round_trip(load("brief.json", brief_json));
	round_trip(load(
		"all.yaml",
		"zone: z1\n"
		"labels: {team: infra, empty: ~}\n"
		"nodes:\n"
		"  - name: all.fields_1\n"
		"    cpu: 2500m\n"
		"    memory: 40GB\n"
		"    numa_domains: 0\n"
		"    region: r\n"
		"    labels: {team: ml, \"quoted key\": \"v\"}\n"
		"    devices:\n"
		"      - class: asic\n"
		"        vendor: Google\n"
		"        model: TPU-v4\n"
		"        arch: tpu\n"
		"        compute_capability: \"8.65\"\n"
		"        memory: 32Gi\n"
		"        memory_bandwidth: 1.2TB/s\n"
		"        peak: {bf16: 275TFLOPS, int8: 275.5TOPS}\n"
		"        tdp: 170W\n"
		"        idle_power: 0.5W\n"
		"        numa: 3\n"
		"        island: 2\n"
		"        health: Degraded\n"
		"        uuid: TPU-1234\n"
		"        pci_bus_id: \"0000:3b:00.0\"\n"
		"        partitions: [{name: half, compute_milli: 500, memory: 16Gi, max: 2}]\n"
		"        links:\n"
		"          - {kind: other, peer: 1}\n"
		"      - {type: cim, links: [{kind: cxl, peer: 0, bandwidth: 512Gbps}],\n"
		"         health: unhealthy, island: 2, attributes: {tags: [a, b, c], n: 3}}\n"
		"      - {type: cpu, vendor: Ampere, count: 2, interconnect: [xgmi, nvlink],\n"
		"         offload_engines: crypto}\n"
		"  - name: bare\n"));
	/* groups the writer must (or must not) fold back into count / interconnect */
	round_trip(
		load("groups.yaml",
		     "nodes:\n"
		     "  - name: w\n"
		     "    count: 3\n"
		     "    devices:\n"
		     "      - {type: gpu, count: 2, island: 7, interconnect: HCCS}\n"
		     "      - {type: gpu, count: 2, island: 7, interconnect: HCCS}\n"
		     "      - {type: gpu, count: 3, interconnect: [PCIe, NVLink, xGMI]}\n"
		     "      - {type: gpu, count: 2, interconnect: NVLink,\n"
		     "         attributes: {interconnect: x, other: y}}\n"
		     "      - {type: gpu, count: 2, rdma_capability: 100G}\n"
		     "      - {type: npu, count: 2, island: 3}\n"
		     "      - {type: npu}\n"
		     "  - {name: w-3, cpu: 1}\n"
		     "  - name: oc\n"
		     "    overcommit: {memory: 1.5}\n"
		     "    devices:\n"
		     "      - {type: gpu, count: 2, memory: 80Gi, mode: timeslice}\n"
		     "      - {type: gpu, memory: 80Gi, timeslice: {replicas: 7}}\n"
		     "      - {type: gpu, memory: 80Gi, overcommit: {memory: 1.25}, mode: whole}\n"
		     "      - {type: gpu, mode: MIG}\n"
		     "  - {name: v-0}\n"
		     "  - {name: v-2}\n"));
}

/* ---- fuzz ---- */

static void mutate(struct xp_rng *r, char *buf, size_t *len, size_t cap)
{
	static const char tokens[] = "{}[]:,-'\"\n #&*!|>%@`\\\t0123456789.eE";
	int edits = 1 + (int)xp_rng_below(r, 4);
	for (int e = 0; e<edits && * len> 0; e++) {
		size_t at = xp_rng_below(r, *len);
		switch (xp_rng_below(r, 5)) {
		case 0: /* any byte */
			buf[at] = (char)xp_rng_next(r);
			break;
		case 1: /* a syntax character */
			buf[at] = tokens[xp_rng_below(r, sizeof(tokens) - 1)];
			break;
		case 2: /* delete */
			memmove(buf + at, buf + at + 1, *len - at - 1);
			(*len)--;
			break;
		case 3: /* duplicate a chunk */
			if (*len + 16 < cap) {
				size_t n = 1 + xp_rng_below(r, 16);
				n = n > *len - at ? *len - at : n;
				memmove(buf + at + n, buf + at, *len - at);
				*len += n;
			}
			break;
		default: /* truncate */
			*len = at;
			break;
		}
	}
}

/* Does tree t hold what jansson read into v (the spelling json_tree.c
 * documents: integers in decimal, reals shortest, strings quoted)? */
static int same_as_jansson(const struct xp_tree *t, json_t *v)
{
	char num[64];
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		if (t->kind != XP_TREE_MAP || t->n != json_object_size(v))
			return 0;
		for (size_t i = 0; i < t->n; i++) {
			json_t *kv = json_object_get(v, t->keys[i]);
			if (!kv || !same_as_jansson(t->kids[i], kv))
				return 0;
		}
		return 1;
	}
	case JSON_ARRAY:
		if (t->kind != XP_TREE_SEQ || t->n != json_array_size(v))
			return 0;
		for (size_t i = 0; i < t->n; i++)
			if (!same_as_jansson(t->kids[i], json_array_get(v, i)))
				return 0;
		return 1;
	case JSON_STRING:
		return t->kind == XP_TREE_SCALAR && t->quoted && t->len == json_string_length(v) &&
		       !memcmp(t->text, json_string_value(v), t->len);
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(num, sizeof(num), "%.*g", prec, json_real_value(v));
			if (strtod(num, NULL) == json_real_value(v))
				break;
		}
		break;
	default:
		snprintf(num, sizeof(num), "%s",
			 json_is_true(v)    ? "true"
			 : json_is_false(v) ? "false"
					    : "null");
	}
	return t->kind == XP_TREE_SCALAR && !t->quoted && !strcmp(t->text, num);
}

/* json_tree.c's reader against jansson, its reference before it, on
 * mutated JSON: the same documents accepted (as jansson read them:
 * duplicates refused, no NUL) and the same values read */
static void test_json_reader(void **state)
{
	(void)state;
	static const char *const seeds[] = {
		"{\"a\": [1, -2.5e3, 0.1, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"], "
		"\"b\": {\"c\": {}, \"d\": []}, \"\\u00fc\": 9223372036854775807}",
		"[{\"name\":\"s0\",\"resources\":{\"cpu\":1},\"depends_on\":[{\"job\":\"s1\"}]}, "
		"1e400, -0, 12.50, \"\\/\\\\\\\"\\b\\f\\r\\t\"]",
		"[\"caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x82\xac\", {\"\xc3\xbc\": \"\xdf\xbf\"}]",
	};
	struct xp_rng r;
	char buf[4096];
	size_t agree = 0, accepted = 0;
	xp_rng_seed(&r, 19);
	for (int it = 0; it < 20000; it++) {
		const char *seed = seeds[it % 3];
		size_t len = strlen(seed);
		memcpy(buf, seed, len);
		if (it >= 3)
			mutate(&r, buf, &len, sizeof(buf));
		if (it >= 3 && it % 4 == 0) /* a byte of UTF-8's range, valid or not */
			buf[xp_rng_below(&r, len)] = (char)(0x80 + xp_rng_below(&r, 128));
		json_error_t je;
		json_t *v = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
		struct xp_tree *t = NULL;
		struct xp_err err = { 0 };
		int rc = xp_tree_from_json("t", buf, len, &t, NULL, &err);
		if ((rc == 0) != (v != NULL))
			fail_msg("iteration %d: jansson %s (%s), the reader %s (%s): '%.*s'", it,
				 v ? "accepts" : "refuses", v ? "" : je.text,
				 rc ? "refuses" : "accepts", err.text, (int)len, buf);
		if (v && !same_as_jansson(t, v))
			fail_msg("iteration %d: read differently: '%.*s'", it, (int)len, buf);
		agree++;
		accepted += v != NULL;
		json_decref(v);
		xp_tree_destroy(t);
	}
	print_message("  %zu documents, %zu accepted by both\n", agree, accepted);
	assert_true(accepted > 100);
}

static void test_fuzz(void **state)
{
	(void)state;
	char *json = NULL;
	struct xp_err err0;
	struct xp_cluster *c =
		xp_descriptor_load_file(XP_SOURCE_DIR "/examples/clusters/small.yaml", &err0);
	assert_non_null(c);
	json = xp_descriptor_to_json(c);
	xp_cluster_destroy(c);
	const char *seeds[] = {
		brief_yaml, brief_json,
		"nodes:\n  - name: a\n    count: 2\n    cpu: 4\n    devices:\n"
		"      - {type: gpu, count: 2, memory: 80Gi, interconnect: NVLink,\n"
		"         partitions: [{name: p, compute_milli: 500}],\n"
		"         peak: {fp16: 312T}, attributes: {a: [1, 2]}}\n"
		"      - {type: dpu, links: [{kind: rdma, bandwidth: 100G}]}\n",
		json
	};
	struct xp_rng r;
	xp_rng_seed(&r, 20240611);
	size_t cap = strlen(json) + 4096, loaded = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	for (int it = 0; it < 2000; it++) {
		const char *seed = seeds[it % 4];
		size_t len = strlen(seed);
		if (it % 4 == 3) { /* the big JSON seed: a window, so iterations stay cheap */
			size_t from = xp_rng_below(&r, len / 2);
			memcpy(buf, seed, len);
			if (it % 8 == 7) {
				memmove(buf, buf + from, len - from);
				len -= from;
			}
		} else {
			memcpy(buf, seed, len);
		}
		mutate(&r, buf, &len, cap);
		static const enum xp_desc_format fmts[] = { XP_DESC_AUTO, XP_DESC_YAML,
							    XP_DESC_JSON };
		struct xp_err err = { 0 };
		c = xp_descriptor_load_buf(it & 1 ? "f.json" : "f.yaml", buf, len,
					   fmts[xp_rng_below(&r, 3)], &err);
		if (c) {
			loaded++;
			char *out = xp_descriptor_to_json(c);
			assert_non_null(out);
			free(out);
			xp_cluster_destroy(c);
		} else {
			assert_true(err.code < 0);
			assert_true(err.text[0] != '\0');
		}
	}
	assert_true(loaded > 0); /* some mutations are harmless */
	free(buf);
	free(json);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_brief_yaml),     cmocka_unit_test(test_brief_json),
		cmocka_unit_test(test_small_example),  cmocka_unit_test(test_count_replication),
		cmocka_unit_test(test_units),	       cmocka_unit_test(test_bad_inputs),
		cmocka_unit_test(test_hostile_inputs), cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_fuzz),	       cmocka_unit_test(test_json_reader),
		cmocka_unit_test(test_mode_overcommit),
	};
	return xp_run_tests(tests, NULL, NULL);
}
