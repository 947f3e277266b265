/*
 * hal_util: what the device families share - finding and binding vendor
 * libraries, adding devices to the model, PCI bus id forms, health and env
 * helpers (see hal_int.h).
 *
 * The library search keeps every dlerror() text: "no such devices" is the
 * normal answer on most machines, and the note that says why (which names
 * were tried, what the loader said) is what an operator reads when a GPU is
 * missing.
 */
#include "hal_int.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *override_for(const struct xp_hal_opts *o, const char *family)
{
	size_t fl = strlen(family);
	for (size_t i = 0; o && i < sizeof(o->lib_override) / sizeof(o->lib_override[0]); i++) {
		const char *s = o->lib_override[i];
		if (s && strncmp(s, family, fl) == 0 && s[fl] == '=')
			return s + fl + 1;
	}
	char var[64];
	snprintf(var, sizeof(var), "XP_HAL_%s_LIB", family);
	for (char *p = var; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	const char *e = getenv(var);
	return e && *e ? e : NULL;
}

int xp_hal_dl_open(const char *family, const struct xp_hal_opts *o, const char *const *candidates,
		   void **handle, char *path, size_t len, struct xp_err *err)
{
	const char *ov = override_for(o, family);
	const char *one[2] = { ov, NULL };
	const char *const *names = ov ? one : candidates;
	struct xp_sb why;

	xp_sb_init(&why);
	*handle = NULL;
	for (size_t i = 0; names[i]; i++) {
		dlerror();
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (h) {
			snprintf(path, len, "%s", names[i]);
			*handle = h;
			xp_sb_free(&why);
			return 0;
		}
		const char *e = dlerror();
		xp_sb_printf(&why, "%s%s", why.len ? "; " : "", e ? e : names[i]);
	}
	int rc = xp_errf(err, XP_ENOENT, "cannot load the vendor library: %s",
			 why.len ? why.s : "no candidates");
	xp_sb_free(&why);
	return rc;
}

int xp_hal_dl_bind(void *handle, const char *lib, const struct xp_hal_sym *syms, void *table,
		   struct xp_err *err)
{
	for (const struct xp_hal_sym *s = syms; s->name; s++) {
		dlerror();
		void *p = dlsym(handle, s->name);
		if (!p && s->required)
			return xp_errf(err, XP_ENOENT, "%s lacks %s: refusing it", lib, s->name);
		/* A data pointer into a function pointer slot: POSIX guarantees the sizes. */
		memcpy((char *)table + s->off, &p, sizeof(p));
	}
	return 0;
}

struct xp_device *xp_hal_add_device(struct xp_node *n, const char *fam, unsigned idx,
				    struct xp_err *err)
{
	if (n->ndevs >= XP_MAX_NODE_DEVS) {
		xp_errf(err, XP_ENOSPC, "more than %d devices on one node (device %u of %s)",
			XP_MAX_NODE_DEVS, idx, fam);
		return NULL;
	}
	struct xp_device *d = xp_node_add_device(n);
	xp_hal_attr(d, "hal", fam);
	xp_hal_attrf(d, "hal_index", "%u", idx);
	return d;
}

void xp_hal_attr(struct xp_device *d, const char *key, const char *value)
{
	xp_attrs_set(&d->attrs, &d->nattrs, key, value);
}

void xp_hal_attrf(struct xp_device *d, const char *key, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	xp_hal_attr(d, key, buf);
}

void xp_hal_trim_devices(struct xp_node *n, uint16_t keep)
{
	while (n->ndevs > keep) {
		struct xp_device *d = &n->devs[--n->ndevs];
		free(d->uuid);
		free(d->pci_bus_id);
		free(d->links);
		for (uint16_t i = 0; i < d->nparts; i++)
			free(d->parts[i].name);
		free(d->parts);
		xp_attrs_free(d->attrs, d->nattrs);
		memset(d, 0, sizeof(*d));
	}
	/* A rolled-back family may have linked survivors to devices now gone. */
	for (uint16_t i = 0; i < n->ndevs; i++) {
		struct xp_device *d = &n->devs[i];
		uint16_t k = 0;
		for (uint16_t l = 0; l < d->nlinks; l++)
			if (d->links[l].peer < (int)keep)
				d->links[k++] = d->links[l];
		d->nlinks = k;
	}
}

int16_t xp_hal_next_island(const struct xp_node *n)
{
	int next = 0;
	for (uint16_t i = 0; i < n->ndevs; i++)
		if (n->devs[i].island >= next)
			next = n->devs[i].island + 1;
	return (int16_t)next;
}

void xp_hal_model_name(const char *in, const char *prefix, char *out, size_t len)
{
	size_t o = 0;
	int dash = 0;

	if (!len)
		return;
	while (*in == ' ' || *in == '\t')
		in++;
	if (prefix && strncasecmp(in, prefix, strlen(prefix)) == 0 && in[strlen(prefix)])
		in += strlen(prefix);
	for (; *in && o + 1 < len; in++) {
		if (isspace((unsigned char)*in)) {
			dash = o > 0;
			continue;
		}
		if (dash && o + 2 < len)
			out[o++] = '-';
		dash = 0;
		out[o++] = *in;
	}
	out[o] = '\0';
}

int xp_hal_pci_parse(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn)
{
	unsigned long v[4];
	int nv = 0;
	const char *p = s;

	if (!s)
		return XP_EINVAL;
	while (*p && nv < 4) {
		char *end;
		if (!isxdigit((unsigned char)*p))
			return XP_EINVAL;
		v[nv++] = strtoul(p, &end, 16);
		p = end;
		if (*p == ':' || *p == '.')
			p++;
		else if (*p)
			return XP_EINVAL;
	}
	if (*p || nv < 3)
		return XP_EINVAL;
	if (nv == 3) { /* no domain */
		v[3] = v[2];
		v[2] = v[1];
		v[1] = v[0];
		v[0] = 0;
	}
	if (v[0] > 0xffffffffUL || v[1] > 0xff || v[2] > 0x1f || v[3] > 7)
		return XP_EINVAL;
	*dom = (unsigned)v[0];
	*bus = (unsigned)v[1];
	*dev = (unsigned)v[2];
	*fn = (unsigned)v[3];
	return 0;
}

void xp_hal_pci_format(unsigned dom, unsigned bus, unsigned dev, unsigned fn, char *out, size_t len)
{
	snprintf(out, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
}

int xp_hal_pci_norm(const char *s, char *out, size_t len)
{
	unsigned d, b, v, f;
	if (xp_hal_pci_parse(s, &d, &b, &v, &f) < 0) {
		if (len)
			out[0] = '\0';
		return XP_EINVAL;
	}
	xp_hal_pci_format(d, b, v, f, out, len);
	return 0;
}

static int rank(int h)
{
	return h == XP_HEALTH_UNHEALTHY	 ? 3
	       : h == XP_HEALTH_DEGRADED ? 2
	       : h == XP_HEALTH_OK	 ? 1
					 : 0;
}

void xp_hal_worse(struct xp_hal_stats *s, int health, const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (rank(health) > rank(s->health))
		s->health = (uint8_t)health;
	size_t l = strlen(s->why), room = sizeof(s->why) - l - 1;
	if (!buf[0] || room < 3)
		return;
	if (l) {
		memcpy(s->why + l, "; ", 2);
		l += 2;
		room -= 2;
	}
	size_t bl = strlen(buf);
	if (bl > room)
		bl = room;
	memcpy(s->why + l, buf, bl);
	s->why[l + bl] = '\0';
}

void xp_hal_apply_health(struct xp_device *d, const struct xp_hal_stats *s)
{
	d->health = s->health;
	if (s->health != XP_HEALTH_OK && s->why[0])
		xp_hal_attr(d, "health_reason", s->why);
}

void xp_hal_env_line(struct xp_sb *out, const char *name, const char *const *vals, unsigned n)
{
	xp_sb_printf(out, "%s=", name);
	for (unsigned i = 0; i < n; i++)
		xp_sb_printf(out, "%s%s", i ? "," : "", vals[i]);
	xp_sb_putc(out, '\n');
}

void xp_hal_stats_init(struct xp_hal_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->health = XP_HEALTH_UNKNOWN;
	s->util_pct = -1;
	s->mem_used_mib = -1;
	s->power_w = -1;
	s->temp_c = -1;
}
