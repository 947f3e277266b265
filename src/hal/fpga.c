/*
 * fpga: FPGA accelerator cards from sysfs, no vendor library.
 *
 * Probe scans <sysfs_root>/sys/bus/pci/devices (sysfs_root defaults to
 * "/", tests point it at tests/fakelibs/sysfs) and keeps two kinds of
 * card, grouping a card's PCI functions (domain:bus:device) into one
 * device:
 *
 *  - Xilinx / AMD Alveo under XRT (vendor 0x10ee): the management and user
 *    functions carry XRT's sub-device folders. rom.*: VBNV (the shell,
 *    "xilinx_u280_xdma_201920_3", which names the board), FPGA (the part),
 *    ddr_bank_size (GiB) x ddr_bank_count_max (the memory). xmc.*:
 *    xmc_fpga_temp (Celsius), xmc_power (microwatts), serial_num. The user
 *    function (the one with a drm/renderD* node) is the card's PCI bus id;
 *    its "ready" (0: shell not ready) and "dev_offline" (1: offline) files
 *    give health.
 *  - Intel / Altera under the Linux DFL driver, OPAE style (vendor 0x8086
 *    or 0x1172 with an fpga_region folder, or a known PAC device id):
 *    fpga_region/regionN/dfl-fme.N is the FPGA management engine -
 *    bitstream_id, errors/catfatal_errors (non-zero: unhealthy),
 *    errors/nonfatal_errors (non-zero: degraded), hwmon/hwmonN/temp1_input
 *    (millidegrees) and power1_input (microwatts); dfl-port.N is the
 *    accelerator port. Device nodes are /dev/dfl-fme.N and /dev/dfl-port.N.
 *
 * Health and sensors are re-read on every stats call, so a card that goes
 * offline or logs a fatal error shows it at the next heartbeat. No FPGA
 * runtime has a "visible devices" variable; the environment names the
 * cards' PCI bus ids in XP_VISIBLE_FPGAS, and attribute dev_nodes lists the
 * device files an agent admits to the task's device cgroup.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/xalloc.h"
#include "hal_int.h"

enum { KIND_XILINX, KIND_INTEL };

#define PATHLEN 512
#define MAXFN	8

struct card {
	int kind;
	unsigned dom, bus, dev;
	char fn[MAXFN][16]; /* PCI functions, canonical bus ids */
	unsigned devid[MAXFN];
	unsigned nfn;
	char user[16]; /* the function reported as the card's bus id */
	char rom[PATHLEN], xmc[PATHLEN], userdir[PATHLEN], fme[PATHLEN], hwmon[PATHLEN];
	char devnodes[256];
};

struct xp_hal_family {
	char root[PATHLEN];
	unsigned n;
	struct card *c;
};

/* snprintf for paths: -1 (and out = "") when the path does not fit. */
static int pathf(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pathf(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vsnprintf(out, len, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= len) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* First line of a small file, trimmed; -1 when unreadable. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	size_t l = strlen(buf);
	while (l && (buf[l - 1] == '\n' || buf[l - 1] == ' ' || buf[l - 1] == '\r'))
		buf[--l] = '\0';
	return 0;
}

static int read_num(const char *path, long long *v)
{
	char buf[64], *end;
	if (read_line(path, buf, sizeof(buf)) < 0 || !buf[0])
		return -1;
	long long x = strtoll(buf, &end, 0);
	if (*end)
		return -1;
	*v = x;
	return 0;
}

static int readf_num(long long *v, const char *fmt, const char *a, const char *b)
{
	char p[PATHLEN * 2];
	if (pathf(p, sizeof(p), fmt, a, b) < 0)
		return -1;
	return read_num(p, v);
}

static int readf_line(char *buf, size_t len, const char *fmt, const char *a, const char *b)
{
	char p[PATHLEN * 2];
	if (pathf(p, sizeof(p), fmt, a, b) < 0)
		return -1;
	return read_line(p, buf, len);
}

/* The smallest entry of dir whose name starts with prefix, as dir/entry. */
static int find_sub(const char *dir, const char *prefix, char *out, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char best[256] = "";
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
		    (!best[0] || strcmp(e->d_name, best) < 0))
			snprintf(best, sizeof(best), "%s", e->d_name);
	closedir(d);
	if (!best[0])
		return -1;
	return pathf(out, len, "%s/%s", dir, best);
}

static const char *intel_model(unsigned devid)
{
	switch (devid) {
	case 0x09c4:
		return "PAC-A10";
	case 0x0b2b:
		return "PAC-D5005";
	case 0x0b30:
		return "PAC-N3000";
	case 0xbcce:
		return "OFS";
	default:
		return NULL;
	}
}

static const char *xilinx_model(unsigned devid)
{
	switch (devid & ~1u) { /* management id, user id = management id + 1 */
	case 0x5000:
		return "Alveo-U200";
	case 0x5004:
		return "Alveo-U250";
	case 0x500c:
		return "Alveo-U280";
	case 0x5020:
		return "Alveo-U50";
	case 0x505c:
		return "Alveo-U55C";
	default:
		return NULL;
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void fpga_close(struct xp_hal_family *f)
{
	if (!f)
		return;
	free(f->c);
	free(f);
}

/* Fill the Xilinx/Intel specifics of card k from its functions. */
static void finish_card(struct xp_hal_family *f, struct card *k)
{
	char dir[PATHLEN * 2], p[PATHLEN * 2];
	int user = -1;

	for (unsigned i = 0; i < k->nfn; i++) {
		pathf(dir, sizeof(dir), "%s/sys/bus/pci/devices/%s", f->root, k->fn[i]);
		if (k->kind == KIND_XILINX) {
			if (!k->rom[0])
				find_sub(dir, "rom.", k->rom, sizeof(k->rom));
			if (!k->xmc[0])
				find_sub(dir, "xmc.", k->xmc, sizeof(k->xmc));
			pathf(p, sizeof(p), "%s/drm", dir);
			if (is_dir(p))
				user = (int)i;
		} else if (!k->fme[0]) {
			char region[PATHLEN];
			pathf(p, sizeof(p), "%s/fpga_region", dir);
			if (find_sub(p, "region", region, sizeof(region)) == 0 &&
			    find_sub(region, "dfl-fme.", k->fme, sizeof(k->fme)) == 0) {
				char port[PATHLEN], hw[PATHLEN];
				const char *fb = strrchr(k->fme, '/') + 1;
				snprintf(k->devnodes, sizeof(k->devnodes), "/dev/%s", fb);
				if (find_sub(region, "dfl-port.", port, sizeof(port)) == 0) {
					size_t l = strlen(k->devnodes);
					snprintf(k->devnodes + l, sizeof(k->devnodes) - l,
						 ",/dev/%s", strrchr(port, '/') + 1);
				}
				pathf(p, sizeof(p), "%s/hwmon", k->fme);
				if (find_sub(p, "hwmon", hw, sizeof(hw)) == 0)
					pathf(k->hwmon, sizeof(k->hwmon), "%s", hw);
				user = (int)i;
			}
		}
	}
	if (user < 0) /* Xilinx: the user function's id is odd; else the last function */
		for (unsigned i = 0; i < k->nfn; i++)
			if (k->kind == KIND_XILINX ? (k->devid[i] & 1) : i + 1 == k->nfn)
				user = (int)i;
	if (user < 0)
		user = (int)k->nfn - 1;
	snprintf(k->user, sizeof(k->user), "%s", k->fn[user]);
	pathf(k->userdir, sizeof(k->userdir), "%s/sys/bus/pci/devices/%s", f->root, k->fn[user]);
	if (k->kind == KIND_XILINX) {
		char drm[PATHLEN], node[PATHLEN];
		pathf(drm, sizeof(drm), "%s/drm", k->userdir);
		if (find_sub(drm, "renderD", node, sizeof(node)) == 0)
			snprintf(k->devnodes, sizeof(k->devnodes), "/dev/dri/%s",
				 strrchr(node, '/') + 1);
	}
}

static int fpga_probe(const struct xp_hal_opts *o, struct xp_hal_family **out, struct xp_err *err)
{
	const char *root = o && o->sysfs_root && *o->sysfs_root ? o->sysfs_root : "/";
	char dir[PATHLEN * 2];
	struct xp_hal_family *f = XNEW(struct xp_hal_family);

	*out = NULL;
	snprintf(f->root, sizeof(f->root), "%s", strcmp(root, "/") == 0 ? "" : root);
	pathf(dir, sizeof(dir), "%s/sys/bus/pci/devices", f->root);
	DIR *d = opendir(dir);
	if (!d) {
		fpga_close(f);
		return xp_errf(err, XP_ENOENT, "no PCI devices under %s", dir);
	}
	char **names = NULL;
	size_t nn = 0;
	struct dirent *e;
	while ((e = readdir(d)) && nn < 4096) {
		if (e->d_name[0] == '.')
			continue;
		names = xreallocarray(names, nn + 1, sizeof(*names));
		names[nn++] = xstrdup(e->d_name);
	}
	closedir(d);
	qsort(names, nn, sizeof(*names), cmp_str);

	f->c = XNEWV(struct card, XP_MAX_NODE_DEVS);
	for (size_t i = 0; i < nn; i++) {
		unsigned dom, bus, dv, fn;
		long long vendor = 0, devid = 0;
		char p[PATHLEN * 2];
		int kind;

		if (xp_hal_pci_parse(names[i], &dom, &bus, &dv, &fn) < 0 ||
		    readf_num(&vendor, "%s/%s/vendor", dir, names[i]) < 0)
			continue;
		readf_num(&devid, "%s/%s/device", dir, names[i]);
		pathf(p, sizeof(p), "%s/%s/fpga_region", dir, names[i]);
		if (vendor == 0x10ee)
			kind = KIND_XILINX;
		else if ((vendor == 0x8086 || vendor == 0x1172) &&
			 (is_dir(p) || intel_model((unsigned)devid)))
			kind = KIND_INTEL;
		else
			continue;

		struct card *k = NULL;
		for (unsigned j = 0; j < f->n && !k; j++)
			if (f->c[j].dom == dom && f->c[j].bus == bus && f->c[j].dev == dv)
				k = &f->c[j];
		if (!k) {
			if (f->n == XP_MAX_NODE_DEVS)
				continue;
			k = &f->c[f->n++];
			k->kind = kind;
			k->dom = dom;
			k->bus = bus;
			k->dev = dv;
		}
		if (k->nfn < MAXFN) {
			xp_hal_pci_format(dom, bus, dv, fn, k->fn[k->nfn], sizeof(k->fn[k->nfn]));
			k->devid[k->nfn++] = (unsigned)devid;
		}
	}
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);

	if (f->n == 0) {
		int rc = xp_errf(err, XP_ENOENT, "no Xilinx or Intel FPGA cards under %s", dir);
		fpga_close(f);
		return rc;
	}
	for (unsigned i = 0; i < f->n; i++)
		finish_card(f, &f->c[i]);
	*out = f;
	return 0;
}

static int fpga_stats(struct xp_hal_family *f, unsigned idx, struct xp_hal_stats *s,
		      struct xp_err *err)
{
	xp_hal_stats_init(s);
	if (idx >= f->n)
		return xp_errf(err, XP_ENOENT, "no FPGA %u (%u present)", idx, f->n);
	const struct card *k = &f->c[idx];
	long long v;

	if (!is_dir(k->userdir)) {
		xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "PCI device %s is gone", k->user);
		return 0;
	}
	s->health = XP_HEALTH_OK;
	if (k->kind == KIND_XILINX) {
		if (readf_num(&v, "%s/%s", k->userdir, "dev_offline") == 0 && v != 0)
			xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "device offline");
		if (readf_num(&v, "%s/%s", k->userdir, "ready") == 0 && v == 0)
			xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "shell not ready");
		if (k->xmc[0] && readf_num(&v, "%s/%s", k->xmc, "xmc_fpga_temp") == 0)
			s->temp_c = (int32_t)v;
		if (k->xmc[0] && readf_num(&v, "%s/%s", k->xmc, "xmc_power") == 0 && v >= 0)
			s->power_w = (int32_t)(v / 1000000);
	} else {
		if (k->fme[0] && readf_num(&v, "%s/%s", k->fme, "errors/catfatal_errors") == 0 &&
		    v != 0)
			xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "catastrophic/fatal error 0x%llx",
				     (unsigned long long)v);
		if (k->fme[0] && readf_num(&v, "%s/%s", k->fme, "errors/nonfatal_errors") == 0 &&
		    v != 0)
			xp_hal_worse(s, XP_HEALTH_DEGRADED, "non-fatal error 0x%llx",
				     (unsigned long long)v);
		if (k->hwmon[0] && readf_num(&v, "%s/%s", k->hwmon, "temp1_input") == 0)
			s->temp_c = (int32_t)(v / 1000);
		if (k->hwmon[0] && readf_num(&v, "%s/%s", k->hwmon, "power1_input") == 0 && v >= 0)
			s->power_w = (int32_t)(v / 1000000);
	}
	return 0;
}

/* "xilinx_u280_xdma_201920_3" -> "Alveo-U280"; NULL when the shell does not name a U board. */
static int model_from_vbnv(const char *vbnv, char *out, size_t len)
{
	const char *p = strchr(vbnv, '_');
	if (!p || (p[1] != 'u' && p[1] != 'U'))
		return -1;
	p++;
	size_t l = strcspn(p, "_");
	if (l < 2 || l > 16)
		return -1;
	snprintf(out, len, "Alveo-");
	size_t o = strlen(out);
	for (size_t i = 0; i < l && o + 1 < len; i++) {
		char ch = p[i];
		out[o++] = ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch;
	}
	out[o] = '\0';
	return 0;
}

static int fpga_enumerate(struct xp_hal_family *f, struct xp_cluster *c, struct xp_node *n,
			  struct xp_err *err)
{
	for (unsigned i = 0; i < f->n; i++) {
		const struct card *k = &f->c[i];
		struct xp_device *d = xp_hal_add_device(n, "fpga", i, err);
		struct xp_hal_stats st;
		char buf[256], model[128] = "";
		long long v, w;

		if (!d)
			return XP_ENOSPC;
		d->cls = XP_CLASS_FPGA;
		d->vendor = xp_strtab_intern(c->syms, k->kind == KIND_XILINX ? "Xilinx" : "Intel");
		d->pci_bus_id = xstrdup(k->user);
		if (readf_num(&v, "%s/%s", k->userdir, "numa_node") == 0 && v >= 0 && v < 32768)
			d->numa = (int16_t)v;
		if (k->kind == KIND_XILINX) {
			if (k->rom[0] &&
			    readf_line(buf, sizeof(buf), "%s/%s", k->rom, "VBNV") == 0) {
				xp_hal_attr(d, "shell", buf);
				model_from_vbnv(buf, model, sizeof(model));
			}
			if (k->rom[0] && readf_line(buf, sizeof(buf), "%s/%s", k->rom, "FPGA") == 0)
				xp_hal_attr(d, "fpga_part", buf);
			if (k->rom[0] && readf_num(&v, "%s/%s", k->rom, "ddr_bank_size") == 0 &&
			    readf_num(&w, "%s/%s", k->rom, "ddr_bank_count_max") == 0 && v > 0 &&
			    w > 0)
				d->mem_mib = (uint64_t)v * (uint64_t)w * 1024;
			if (k->xmc[0] &&
			    readf_line(buf, sizeof(buf), "%s/%s", k->xmc, "serial_num") == 0)
				xp_hal_attr(d, "serial", buf);
		} else if (k->fme[0]) {
			if (readf_line(buf, sizeof(buf), "%s/%s", k->fme, "bitstream_id") == 0)
				xp_hal_attr(d, "bitstream_id", buf);
		}
		if (!model[0]) {
			const char *m = NULL;
			for (unsigned j = 0; j < k->nfn && !m; j++)
				m = k->kind == KIND_XILINX ? xilinx_model(k->devid[j])
							   : intel_model(k->devid[j]);
			if (m)
				snprintf(model, sizeof(model), "%s", m);
			else
				snprintf(model, sizeof(model), "FPGA-%s-%04x",
					 k->kind == KIND_XILINX ? "10ee" : "8086", k->devid[0]);
		}
		d->model = xp_strtab_intern(c->syms, model);
		xp_hal_attr(d, "interconnect", "PCIe");
		if (k->devnodes[0])
			xp_hal_attr(d, "dev_nodes", k->devnodes);
		fpga_stats(f, i, &st, NULL);
		xp_hal_apply_health(d, &st);
	}
	return 0;
}

static int fpga_env(struct xp_hal_family *f, const unsigned *idx, unsigned n, struct xp_sb *out)
{
	const char *v[XP_MAX_NODE_DEVS] = { NULL };
	if (n > XP_MAX_NODE_DEVS)
		return XP_EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (idx[i] >= f->n)
			return XP_ENOENT;
		v[i] = f->c[idx[i]].user;
	}
	xp_hal_env_line(out, "XP_VISIBLE_FPGAS", v, n);
	return 0;
}

const struct xp_device_ops xp_hal_fpga_ops = {
	.abi = XP_HAL_ABI,
	.name = "fpga",
	.probe = fpga_probe,
	.enumerate = fpga_enumerate,
	.stats = fpga_stats,
	.env = fpga_env,
	.close = fpga_close,
};
