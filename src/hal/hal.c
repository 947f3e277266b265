/*
 * hal: the router over the device families (see hal.h).
 *
 * Open probes each family once and keeps what it returned: a family state,
 * "not here" (XP_ENOENT: a note, the family is skipped) or a real error
 * (kept, reported by every discover as a warning). Each family's ops table
 * is checked for the ABI version before it is used, as Slurm checks a
 * plugin's version symbol.
 *
 * Discover builds a fresh one-node cluster. Order matters once: the cpu
 * family runs after the device families, because it places devices on NUMA
 * domains by PCI bus id and so needs them present. In emulation (a
 * devices_file) the order is reversed - cpu first, then fake - so the
 * descriptor's node figures (cpu, memory, arch), where given, win over the
 * real machine's.
 *
 * A family that fails half way through enumerate is rolled back (its
 * devices removed) so the node never holds a partial family. The router
 * remembers, for each node device index, the owning family and the
 * family-local index (read back from the "hal_index" attribute the family
 * set), which is all stats and env need.
 */
#include "hal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/parse.h"
#include "../lib/xalloc.h"
#include "hal_int.h"

const struct xp_device_ops *const xp_hal_families[] = {
	&xp_hal_cpu_ops,       &xp_hal_nvidia_ops, &xp_hal_amd_ops,  &xp_hal_ascend_ops,
	&xp_hal_cambricon_ops, &xp_hal_fpga_ops,   &xp_hal_fake_ops, NULL,
};

#define MAX_FAMS 16

struct fam {
	const struct xp_device_ops *ops;
	struct xp_hal_family *f; /* NULL: probe failed (err) */
	struct xp_err err;
};

struct map {
	uint8_t fam;
	unsigned idx;
};

struct xp_hal {
	struct fam fam[MAX_FAMS];
	unsigned nfam;
	int emulate;
	pthread_mutex_t mu; /* map, family calls */
	struct map map[XP_MAX_NODE_DEVS];
	unsigned nmap;
	struct xp_sb notes, active;
};

const struct xp_device_ops *xp_hal_family_ops(const char *name)
{
	for (size_t i = 0; xp_hal_families[i]; i++)
		if (strcmp(xp_hal_families[i]->name, name) == 0)
			return xp_hal_families[i];
	return NULL;
}

static int check_opts(const struct xp_hal_opts *o, struct xp_err *err)
{
	for (size_t i = 0; i < sizeof(o->lib_override) / sizeof(o->lib_override[0]); i++) {
		const char *s = o->lib_override[i];
		if (!s)
			continue;
		const char *eq = strchr(s, '=');
		char fam[32];
		if (!eq || eq == s || (size_t)(eq - s) >= sizeof(fam) || !eq[1])
			return xp_errf(err, XP_EINVAL,
				       "lib_override[%zu]: expected FAMILY=PATH, got '%s'", i, s);
		memcpy(fam, s, (size_t)(eq - s));
		fam[eq - s] = '\0';
		if (!xp_hal_family_ops(fam))
			return xp_errf(err, XP_EINVAL, "lib_override[%zu]: no device family '%s'",
				       i, fam);
	}
	return 0;
}

struct xp_hal *xp_hal_open(const struct xp_hal_opts *o, struct xp_err *err)
{
	static const struct xp_hal_opts none;
	if (!o)
		o = &none;
	if (check_opts(o, err) < 0)
		return NULL;

	struct xp_hal *h = XNEW(struct xp_hal);
	pthread_mutex_init(&h->mu, NULL);
	xp_sb_init(&h->notes);
	xp_sb_init(&h->active);
	h->emulate = o->devices_file != NULL;

	for (size_t i = 0; xp_hal_families[i] && h->nfam < MAX_FAMS; i++) {
		const struct xp_device_ops *ops = xp_hal_families[i];
		int is_fake = strcmp(ops->name, "fake") == 0;
		if (strcmp(ops->name, "cpu") != 0 && is_fake != h->emulate)
			continue;
		if (ops->abi != XP_HAL_ABI) {
			xp_sb_printf(&h->notes, "%s: plugin ABI %u, this build speaks %d\n",
				     ops->name, ops->abi, XP_HAL_ABI);
			continue;
		}
		struct fam *fm = &h->fam[h->nfam];
		struct xp_err e = { 0 };
		int rc = ops->probe(o, &fm->f, &e);
		if (rc == XP_ENOENT) {
			xp_sb_printf(&h->notes, "%s: %s\n", ops->name, e.text);
			continue;
		}
		if (rc < 0 && is_fake) { /* emulation asked for and impossible */
			xp_errf(err, rc, "fake: %s", e.text);
			xp_hal_close(h);
			return NULL;
		}
		fm->ops = ops;
		if (rc < 0) {
			fm->f = NULL;
			fm->err = e;
			if (!fm->err.code)
				fm->err.code = rc;
		} else {
			xp_sb_printf(&h->active, "%s%s", h->active.len ? "," : "", ops->name);
		}
		h->nfam++;
	}
	return h;
}

static void warn(struct xp_sb *warnings, struct xp_err *err, const char *fam,
		 const struct xp_err *e)
{
	if (warnings)
		xp_sb_printf(warnings, "%s: %s\n", fam, e->text);
	if (err && !err->code)
		xp_errf(err, e->code ? e->code : XP_EINTERNAL, "%s: %s", fam, e->text);
}

static int enumerate_one(struct xp_hal *h, unsigned fi, struct xp_cluster *c, struct xp_node *n,
			 struct xp_sb *warnings, struct xp_err *err)
{
	struct fam *fm = &h->fam[fi];
	struct xp_err e = { 0 };
	uint16_t before = n->ndevs;

	if (!fm->f) {
		warn(warnings, err, fm->ops->name, &fm->err);
		return 0;
	}
	int rc = fm->ops->enumerate(fm->f, c, n, &e);
	if (rc < 0) {
		xp_hal_trim_devices(n, before);
		if (!e.code)
			e.code = rc;
		warn(warnings, err, fm->ops->name, &e);
		return 0;
	}
	for (uint16_t d = before; d < n->ndevs; d++) {
		const char *s = xp_attrs_get(n->devs[d].attrs, n->devs[d].nattrs, "hal_index");
		int64_t idx = -1;
		if (!s || xp_parse_i64(s, 0, UINT32_MAX, &idx) < 0) {
			xp_hal_trim_devices(n, before);
			e.code = XP_EINTERNAL;
			snprintf(e.text, sizeof(e.text), "device %u has no hal_index attribute",
				 (unsigned)d);
			warn(warnings, err, fm->ops->name, &e);
			return 0;
		}
		h->map[d].fam = (uint8_t)fi;
		h->map[d].idx = (unsigned)idx;
	}
	return 0;
}

struct xp_cluster *xp_hal_discover(struct xp_hal *h, const char *node_name, struct xp_sb *warnings,
				   struct xp_err *err)
{
	char host[256];
	if (err) {
		err->code = 0;
		err->text[0] = '\0';
	}
	if (!h) {
		xp_errf(err, XP_EINVAL, "no hal handle");
		return NULL;
	}
	if (!node_name) {
		if (gethostname(host, sizeof(host)) < 0 || !host[0])
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		node_name = host;
	}

	struct xp_cluster *c = xp_cluster_create();
	struct xp_node *n = xp_cluster_add_node(c, node_name);
	unsigned order[MAX_FAMS], no = 0, cpu = MAX_FAMS;

	for (unsigned i = 0; i < h->nfam; i++) {
		if (strcmp(h->fam[i].ops->name, "cpu") == 0)
			cpu = i;
		else
			order[no++] = i;
	}
	if (cpu < MAX_FAMS) {
		if (h->emulate) {
			memmove(order + 1, order, no * sizeof(order[0]));
			order[0] = cpu;
			no++;
		} else {
			order[no++] = cpu;
		}
	}

	pthread_mutex_lock(&h->mu);
	h->nmap = 0;
	for (unsigned i = 0; i < no; i++)
		enumerate_one(h, order[i], c, n, warnings, err);
	h->nmap = n->ndevs;
	pthread_mutex_unlock(&h->mu);
	return c;
}

int xp_hal_stats(struct xp_hal *h, unsigned dev, struct xp_hal_stats *out, struct xp_err *err)
{
	xp_hal_stats_init(out);
	if (!h)
		return xp_errf(err, XP_EINVAL, "no hal handle");
	pthread_mutex_lock(&h->mu);
	int rc;
	if (dev >= h->nmap) {
		rc = xp_errf(err, XP_ENOENT, "no device %u on this node (%u discovered)", dev,
			     h->nmap);
	} else {
		struct fam *fm = &h->fam[h->map[dev].fam];
		rc = fm->ops->stats(fm->f, h->map[dev].idx, out, err);
		if (rc < 0 && err && err->text[0])
			xp_err_prefix(err, "%s: ", fm->ops->name);
	}
	pthread_mutex_unlock(&h->mu);
	return rc;
}

/* The family and local index of node device dev, with h->mu held. */
static int mig_route(struct xp_hal *h, unsigned dev, struct fam **fm, unsigned *idx,
		     struct xp_err *err)
{
	if (dev >= h->nmap)
		return xp_errf(err, XP_ENOENT, "no device %u on this node (%u discovered)", dev,
			       h->nmap);
	*fm = &h->fam[h->map[dev].fam];
	if (!(*fm)->ops->mig_list || !(*fm)->ops->mig_create || !(*fm)->ops->mig_destroy)
		return xp_errf(err, XP_EUNSUPP, "device %u (%s) has no MIG", dev, (*fm)->ops->name);
	*idx = h->map[dev].idx;
	return 0;
}

/* op: 0 list, 1 create, 2 destroy, 3 set the mode */
static int mig_call(struct xp_hal *h, unsigned dev, int op, unsigned a, unsigned b, void *out,
		    struct xp_err *err)
{
	if (!h)
		return xp_errf(err, XP_EINVAL, "no hal handle");
	pthread_mutex_lock(&h->mu);
	unsigned idx = 0;
	struct fam *fm = NULL;
	int rc = mig_route(h, dev, &fm, &idx, err);
	if (rc == 0 && op == 0)
		rc = fm->ops->mig_list(fm->f, idx, out, err);
	else if (rc == 0 && op == 1)
		rc = fm->ops->mig_create(fm->f, idx, a, b, out, err);
	else if (rc == 0 && op == 2)
		rc = fm->ops->mig_destroy(fm->f, idx, a, err);
	else if (rc == 0)
		rc = fm->ops->mig_set_mode ? fm->ops->mig_set_mode(fm->f, idx, (int)a, err)
					   : xp_errf(err, XP_EUNSUPP,
						     "device %u cannot change its MIG mode", dev);
	if (rc < 0 && fm && err && err->text[0])
		xp_err_prefix(err, "%s: ", fm->ops->name);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

int xp_hal_mig_list(struct xp_hal *h, unsigned dev, struct xp_hal_mig *out, struct xp_err *err)
{
	memset(out, 0, sizeof(*out));
	return mig_call(h, dev, 0, 0, 0, out, err);
}

int xp_hal_mig_create(struct xp_hal *h, unsigned dev, unsigned profile_id, unsigned start,
		      struct xp_hal_mig_inst *out, struct xp_err *err)
{
	memset(out, 0, sizeof(*out));
	return mig_call(h, dev, 1, profile_id, start, out, err);
}

int xp_hal_mig_destroy(struct xp_hal *h, unsigned dev, unsigned gi_id, struct xp_err *err)
{
	return mig_call(h, dev, 2, gi_id, 0, NULL, err);
}

int xp_hal_env(struct xp_hal *h, const unsigned *devs, unsigned n, struct xp_sb *out,
	       struct xp_err *err)
{
	if (!h)
		return xp_errf(err, XP_EINVAL, "no hal handle");
	pthread_mutex_lock(&h->mu);
	int rc = 0;
	for (unsigned i = 0; i < n && rc == 0; i++) {
		if (devs[i] >= h->nmap)
			rc = xp_errf(err, XP_ENOENT, "no device %u on this node (%u discovered)",
				     devs[i], h->nmap);
		for (unsigned j = 0; j < i && rc == 0; j++)
			if (devs[j] == devs[i])
				rc = xp_errf(err, XP_EINVAL, "device %u given twice", devs[i]);
	}
	unsigned idx[XP_MAX_NODE_DEVS];
	for (unsigned fi = 0; fi < h->nfam && rc == 0; fi++) {
		unsigned k = 0, present = 0;
		for (unsigned d = 0; d < h->nmap; d++)
			present += h->map[d].fam == fi;
		if (!present)
			continue;
		for (unsigned i = 0; i < n; i++)
			if (h->map[devs[i]].fam == fi)
				idx[k++] = h->map[devs[i]].idx;
		struct fam *fm = &h->fam[fi];
		rc = fm->ops->env(fm->f, idx, k, out);
		if (rc < 0)
			rc = xp_errf(err, rc, "%s: cannot write the environment", fm->ops->name);
	}
	pthread_mutex_unlock(&h->mu);
	return rc;
}

const char *xp_hal_notes(const struct xp_hal *h)
{
	return h && h->notes.s ? h->notes.s : "";
}

const char *xp_hal_active(const struct xp_hal *h)
{
	return h && h->active.s ? h->active.s : "";
}

void xp_hal_close(struct xp_hal *h)
{
	if (!h)
		return;
	for (unsigned i = 0; i < h->nfam; i++)
		if (h->fam[i].f)
			h->fam[i].ops->close(h->fam[i].f);
	xp_sb_free(&h->notes);
	xp_sb_free(&h->active);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

int xp_hal_mig_set_mode(struct xp_hal *h, unsigned dev, int on, struct xp_err *err)
{
	return mig_call(h, dev, 3, on ? 1u : 0u, 0, NULL, err);
}
