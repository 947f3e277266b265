/*
 * cmd_cluster: `xpool cluster FILE` - load a cluster descriptor (YAML or
 * JSON, docs/descriptor.md), report the first error with file, line and
 * field path, or summarise the cluster: nodes, devices per class and model,
 * CPU, memory and NVLink/HCCS islands. `-o json` prints the descriptor as
 * xpool reads it (normalised JSON that loads back to the same cluster).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../descriptor/descriptor.h"
#include "../lib/xalloc.h"
#include "cli.h"
#include "flags.h"

struct tally {
	int cls;
	xp_sym vendor, model;
	uint64_t count, mem_mib;
};

static void summarise(const struct xp_cluster *c)
{
	struct tally *t = NULL;
	size_t nt = 0;
	uint64_t cpu = 0, mem = 0, islands = 0, devs = 0;

	for (size_t i = 0; i < c->nnodes; i++) {
		const struct xp_node *n = &c->nodes[i];
		int16_t seen[XP_MAX_NODE_DEVS];
		int nseen = 0;
		cpu += n->cpu_milli;
		mem += n->mem_mib;
		for (uint16_t d = 0; d < n->ndevs; d++) {
			const struct xp_device *dv = &n->devs[d];
			size_t k;
			devs++;
			for (k = 0; k < nt; k++)
				if (t[k].cls == dv->cls && t[k].vendor == dv->vendor &&
				    t[k].model == dv->model && t[k].mem_mib == dv->mem_mib)
					break;
			if (k == nt) {
				t = xreallocarray(t, nt + 1, sizeof(*t));
				t[nt++] = (struct tally){ dv->cls, dv->vendor, dv->model, 0,
							  dv->mem_mib };
			}
			t[k].count++;
			if (dv->island >= 0) {
				int j;
				for (j = 0; j < nseen && seen[j] != dv->island; j++)
					;
				if (j == nseen) {
					seen[nseen++] = dv->island;
					islands++;
				}
			}
		}
	}
	printf("%zu nodes, %llu devices, %.1f cores, %.1f GiB memory, %llu device islands\n\n",
	       c->nnodes, (unsigned long long)devs, (double)cpu / 1000, (double)mem / 1024,
	       (unsigned long long)islands);
	printf("%-6s %-12s %-24s %10s %8s\n", "CLASS", "VENDOR", "MODEL", "MEMORY", "COUNT");
	for (size_t k = 0; k < nt; k++) {
		char memtxt[32] = "-";
		if (t[k].mem_mib)
			snprintf(memtxt, sizeof(memtxt), "%.0fGi", (double)t[k].mem_mib / 1024);
		const char *v = xp_strtab_str(c->syms, t[k].vendor);
		const char *m = xp_strtab_str(c->syms, t[k].model);
		printf("%-6s %-12s %-24s %10s %8llu\n", xp_class_name(t[k].cls), *v ? v : "-",
		       *m ? m : "-", memtxt, (unsigned long long)t[k].count);
	}
	free(t);
}

int xp_verb_cluster(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "file", XP_FLAG_STR, "FILE", "cluster descriptor, YAML or JSON", 'f' },
		{ "output", XP_FLAG_STR, "FORMAT", "table or json", 'o' },
		{ NULL, 0, NULL, NULL },
	};
	struct xp_err err = { 0 };
	struct xp_cluster *c = NULL;
	int help, status = 2;

	xp_flag_get(flags, "output")->sval = (char *)"table";
	if (xp_flags_parse(flags, argc, argv, &help, &err) < 0) {
		status = xp_cli_fail("cluster", &err, 2);
		goto out;
	}
	if (help) {
		xp_flags_usage(
			stdout, "xpool cluster -f FILE [-o table|json]",
			"Check a cluster descriptor (docs/descriptor.md) and summarise it, or\n"
			"print it as normalised JSON.",
			flags);
		status = 0;
		goto out;
	}
	static const char *const outputs[] = { "table", "json", NULL };
	int json;
	if (xp_flag_choice(flags, "output", outputs, &json, &err) < 0) {
		status = xp_cli_fail("cluster", &err, 2);
		goto out;
	}
	if (!xp_flag_get(flags, "file")->given) {
		xp_errf(&err, XP_EINVAL, "-f FILE is required");
		status = xp_cli_fail("cluster", &err, 2);
		goto out;
	}
	c = xp_descriptor_load_file(xp_flag_get(flags, "file")->sval, &err);
	if (!c) {
		status = xp_cli_fail("cluster", &err, 1);
		goto out;
	}
	if (json) {
		char *js = xp_descriptor_to_json(c);
		puts(js);
		free(js);
	} else {
		summarise(c);
	}
	status = 0;
out:
	xp_cluster_destroy(c);
	xp_flags_free(flags);
	return status;
}
