/*
 * cambricon: Cambricon MLUs through CNDev (libcndev.so, from the MLU
 * driver), opened at run time.
 *
 * Probe loads the library (libcndev.so, then the Neuware install path),
 * binds it (cndev_abi.h), calls cndevInit and counts devices with
 * cndevGetDeviceCount at API version 5: a library or driver too old for
 * that answers CNDEV_ERROR_UNSUPPORTED_API_VERSION or LOW_DRIVER_VERSION,
 * which refuses the family (XP_EVERSION). The library version
 * (cndevGetLibVersion) is recorded when offered.
 *
 * Enumerate: model from cndevGetCardNameStringByDevId ("MLU370-X8"), else
 * from the cndevGetCardName enum; UUID "MLU-" + CNDev's UUID; physical
 * memory; the cambricon_dev node.
 *
 * Health: cndevGetCardHealthState - health flag 0 is unhealthy; newer
 * libraries also give a device state (in problem: unhealthy) and a driver
 * state (anything but running: degraded). Those two fields are preset to
 * -1 so an older library that does not write them is not misread.
 *
 * Environment: MLU_VISIBLE_DEVICES lists CNDev indices ("" hides all).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/xalloc.h"
#include "cndev_abi.h"
#include "hal_int.h"

struct cndev_fns {
#define X(ret, name, args) ret(*name) args;
	XP_CNDEV_FUNCS(X)
#undef X
};

#define REQ(fn) XP_HAL_SYM(struct cndev_fns, fn, 1)
#define OPT(fn) XP_HAL_SYM(struct cndev_fns, fn, 0)
static const struct xp_hal_sym cndev_syms[] = {
	REQ(cndevInit),
	REQ(cndevRelease),
	REQ(cndevGetDeviceCount),
	REQ(cndevGetMemoryUsage),
	REQ(cndevGetCardHealthState),
	OPT(cndevGetErrorString),
	OPT(cndevGetLibVersion),
	OPT(cndevGetDeviceHandleByIndex),
	OPT(cndevGetCardName),
	OPT(cndevGetCardNameStringByDevId),
	OPT(cndevGetUUID),
	OPT(cndevGetDeviceUtilizationInfo),
	OPT(cndevGetTemperatureInfo),
	{ NULL, 0, 0 },
};

struct xp_hal_family {
	void *dl;
	char lib[256];
	struct cndev_fns fn;
	int inited;
	char version[48];
	unsigned n;
	cndevDevice_t h[XP_MAX_NODE_DEVS];
};

static const char *estr(const struct xp_hal_family *f, cndevRet_t r)
{
	const char *s = f->fn.cndevGetErrorString ? f->fn.cndevGetErrorString(r) : NULL;
	return s ? s : "CNDev error";
}

static void cn_close(struct xp_hal_family *f)
{
	if (!f)
		return;
	if (f->inited)
		f->fn.cndevRelease();
	if (f->dl)
		dlclose(f->dl);
	free(f);
}

static int cn_probe(const struct xp_hal_opts *o, struct xp_hal_family **out, struct xp_err *err)
{
	static const char *const names[] = {
		"libcndev.so",
		"/usr/local/neuware/lib64/libcndev.so",
		NULL,
	};
	struct xp_hal_family *f = XNEW(struct xp_hal_family);
	cndevRet_t r;
	int rc;

	*out = NULL;
	if ((rc = xp_hal_dl_open("cambricon", o, names, &f->dl, f->lib, sizeof(f->lib), err)) < 0 ||
	    (rc = xp_hal_dl_bind(f->dl, f->lib, cndev_syms, &f->fn, err)) < 0) {
		cn_close(f);
		return rc;
	}
	if (!f->fn.cndevGetCardNameStringByDevId && !f->fn.cndevGetCardName) {
		rc = xp_errf(err, XP_ENOENT,
			     "%s lacks cndevGetCardNameStringByDevId and cndevGetCardName: "
			     "refusing it",
			     f->lib);
		cn_close(f);
		return rc;
	}
	if ((r = f->fn.cndevInit(0)) != CNDEV_SUCCESS) {
		rc = xp_errf(err, XP_EIO, "%s: cndevInit: %s (CNDev error %d)", f->lib, estr(f, r),
			     r);
		cn_close(f);
		return rc;
	}
	f->inited = 1;
	if (f->fn.cndevGetLibVersion) {
		struct {
			cndevLibVersionInfo_t v;
			int pad[16];
		} lv;
		memset(&lv, 0, sizeof(lv));
		lv.v.version = CNDEV_VERSION_5;
		if (f->fn.cndevGetLibVersion(&lv.v) == CNDEV_SUCCESS)
			snprintf(f->version, sizeof(f->version), "%u.%u.%u", lv.v.libMajorVersion,
				 lv.v.libMinorVersion, lv.v.libBuildVersion);
	}
	struct {
		cndevCardInfo_t ci;
		int pad[16];
	} card;
	memset(&card, 0, sizeof(card));
	card.ci.version = CNDEV_VERSION_5;
	r = f->fn.cndevGetDeviceCount(&card.ci);
	if (r == CNDEV_ERROR_UNSUPPORTED_API_VERSION || r == CNDEV_ERROR_LOW_DRIVER_VERSION) {
		rc = xp_errf(err, XP_EVERSION,
			     "%s: CNDev API version %d not supported (%s): refusing it", f->lib,
			     CNDEV_VERSION_5, estr(f, r));
		cn_close(f);
		return rc;
	}
	if (r != CNDEV_SUCCESS) {
		rc = xp_errf(err, XP_EIO, "%s: cndevGetDeviceCount: %s", f->lib, estr(f, r));
		cn_close(f);
		return rc;
	}
	if (card.ci.number == 0) {
		rc = xp_errf(err, XP_ENOENT, "no Cambricon MLUs");
		cn_close(f);
		return rc;
	}
	f->n = card.ci.number > XP_MAX_NODE_DEVS ? XP_MAX_NODE_DEVS : card.ci.number;
	for (unsigned i = 0; i < f->n; i++)
		if (!f->fn.cndevGetDeviceHandleByIndex ||
		    f->fn.cndevGetDeviceHandleByIndex((int)i, &f->h[i]) != CNDEV_SUCCESS)
			f->h[i] = (cndevDevice_t)i; /* older API: the index is the handle */
	*out = f;
	return 0;
}

static const char *enum_name(int id)
{
	static const struct {
		int id;
		const char *name;
	} t[] = {
		{ 0, "MLU100" },  { 1, "MLU270" },  { 16, "MLU220" }, { 17, "MLU220" },
		{ 18, "MLU220" }, { 19, "MLU220" }, { 20, "MLU290" }, { 23, "MLU370" },
		{ 24, "MLU365" }, { 25, "CE3226" }, { 26, "MLU590" }, { 27, "MLU585" },
		{ 30, "MLU580" }, { 31, "MLU570" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].id == id)
			return t[i].name;
	return NULL;
}

static int cn_stats(struct xp_hal_family *f, unsigned idx, struct xp_hal_stats *s,
		    struct xp_err *err)
{
	xp_hal_stats_init(s);
	if (idx >= f->n)
		return xp_errf(err, XP_ENOENT, "no MLU %u (%u present)", idx, f->n);
	cndevDevice_t h = f->h[idx];
	struct {
		cndevCardHealthState_t hs;
		int pad[16];
	} hs;
	memset(&hs, 0, sizeof(hs));
	hs.hs.version = CNDEV_VERSION_5;
	hs.hs.deviceState = hs.hs.driverState = -1; /* unset by older libraries */
	cndevRet_t r = f->fn.cndevGetCardHealthState(&hs.hs, h);
	if (r != CNDEV_SUCCESS) {
		xp_hal_worse(s, XP_HEALTH_UNKNOWN, "cndevGetCardHealthState: %s", estr(f, r));
	} else {
		s->health = XP_HEALTH_OK;
		if (hs.hs.health == 0)
			xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "CNDev health flag 0");
		if (hs.hs.deviceState == CNDEV_HEALTH_STATE_DEVICE_IN_PROBLEM)
			xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "device in problem");
		if (hs.hs.driverState >= 0 &&
		    hs.hs.driverState != CNDEV_HEALTH_STATE_DRIVER_RUNNING)
			xp_hal_worse(s, XP_HEALTH_DEGRADED, "driver state %d", hs.hs.driverState);
	}
	struct {
		cndevUtilizationInfo_t u;
		int pad[64];
	} u;
	memset(&u, 0, sizeof(u));
	u.u.version = CNDEV_VERSION_5;
	if (f->fn.cndevGetDeviceUtilizationInfo &&
	    f->fn.cndevGetDeviceUtilizationInfo(&u.u, h) == CNDEV_SUCCESS &&
	    u.u.averageCoreUtilization >= 0 && u.u.averageCoreUtilization <= 100)
		s->util_pct = u.u.averageCoreUtilization;
	struct {
		cndevMemoryInfo_t m;
		int64_t pad[32];
	} m;
	memset(&m, 0, sizeof(m));
	m.m.version = CNDEV_VERSION_5;
	if (f->fn.cndevGetMemoryUsage(&m.m, h) == CNDEV_SUCCESS && m.m.physicalMemoryUsed >= 0)
		s->mem_used_mib = m.m.physicalMemoryUsed;
	struct {
		cndevTemperatureInfo_t t;
		int pad[64];
	} t;
	memset(&t, 0, sizeof(t));
	t.t.version = CNDEV_VERSION_5;
	if (f->fn.cndevGetTemperatureInfo &&
	    f->fn.cndevGetTemperatureInfo(&t.t, h) == CNDEV_SUCCESS)
		s->temp_c = t.t.board;
	return 0;
}

static int cn_enumerate(struct xp_hal_family *f, struct xp_cluster *c, struct xp_node *n,
			struct xp_err *err)
{
	xp_sym vendor = xp_strtab_intern(c->syms, "Cambricon");

	for (unsigned i = 0; i < f->n; i++) {
		cndevDevice_t h = f->h[i];
		struct xp_device *d = xp_hal_add_device(n, "cambricon", i, err);
		struct xp_hal_stats st;
		char buf[160];

		if (!d)
			return XP_ENOSPC;
		d->cls = XP_CLASS_NPU;
		d->vendor = vendor;
		const char *name = NULL;
		if (f->fn.cndevGetCardNameStringByDevId)
			name = f->fn.cndevGetCardNameStringByDevId(h);
		if ((!name || !*name) && f->fn.cndevGetCardName) {
			struct {
				cndevCardName_t cn;
				int pad[16];
			} cn;
			memset(&cn, 0, sizeof(cn));
			cn.cn.version = CNDEV_VERSION_5;
			if (f->fn.cndevGetCardName(&cn.cn, h) == CNDEV_SUCCESS)
				name = enum_name(cn.cn.id);
		}
		if (name && *name) {
			snprintf(buf, sizeof(buf), "%s", name);
			char model[160];
			xp_hal_model_name(buf, "Cambricon ", model, sizeof(model));
			if (model[0])
				d->model = xp_strtab_intern(c->syms, model);
		}
		struct {
			cndevUUID_t u;
			int pad[16];
		} u;
		memset(&u, 0, sizeof(u));
		u.u.version = CNDEV_VERSION_5;
		if (f->fn.cndevGetUUID && f->fn.cndevGetUUID(&u.u, h) == CNDEV_SUCCESS) {
			u.u.uuid[CNDEV_UUID_SIZE - 1] = '\0';
			if (u.u.uuid[0]) {
				snprintf(buf, sizeof(buf), "MLU-%s", (const char *)u.u.uuid);
				d->uuid = xstrdup(buf);
			}
		}
		struct {
			cndevMemoryInfo_t m;
			int64_t pad[32];
		} m;
		memset(&m, 0, sizeof(m));
		m.m.version = CNDEV_VERSION_5;
		if (f->fn.cndevGetMemoryUsage(&m.m, h) == CNDEV_SUCCESS &&
		    m.m.physicalMemoryTotal > 0)
			d->mem_mib = (uint64_t)m.m.physicalMemoryTotal;
		xp_hal_attrf(d, "dev_nodes", "/dev/cambricon_dev%u", i);
		if (f->version[0])
			xp_hal_attr(d, "cndev_version", f->version);
		cn_stats(f, i, &st, NULL);
		xp_hal_apply_health(d, &st);
	}
	return 0;
}

static int cn_env(struct xp_hal_family *f, const unsigned *idx, unsigned n, struct xp_sb *out)
{
	char num[XP_MAX_NODE_DEVS][12];
	const char *v[XP_MAX_NODE_DEVS] = { NULL };

	if (n > XP_MAX_NODE_DEVS)
		return XP_EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (idx[i] >= f->n)
			return XP_ENOENT;
		snprintf(num[i], sizeof(num[i]), "%u", idx[i]);
		v[i] = num[i];
	}
	xp_hal_env_line(out, "MLU_VISIBLE_DEVICES", v, n);
	return 0;
}

const struct xp_device_ops xp_hal_cambricon_ops = {
	.abi = XP_HAL_ABI,
	.name = "cambricon",
	.probe = cn_probe,
	.enumerate = cn_enumerate,
	.stats = cn_stats,
	.env = cn_env,
	.close = cn_close,
};
