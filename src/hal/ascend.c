/*
 * ascend: Huawei Ascend NPUs through DCMI (libdcmi.so, from the Ascend
 * driver), opened at run time.
 *
 * Probe loads the library (libdcmi.so, then the driver's install path),
 * binds it (dcmi_abi.h), calls dcmi_init and walks cards -> chips. A card
 * can hold an MCU and a CPU besides its NPUs; dcmi_get_device_type, when the
 * library has it, keeps only NPUs. Each NPU's logic id (what the runtime
 * numbers devices by) comes from dcmi_get_device_logic_id. DCMI has no
 * version number worth comparing across releases; the version check is the
 * set of required entry points (the logic-id API appeared with DCMI v2),
 * and the DCMI and driver versions are recorded as attributes.
 *
 * Enumerate: model "Ascend" + chip name ("Ascend910B3"), HBM size (DDR size
 * on chips without HBM), PCI bus id, the davinci device node.
 *
 * Health: dcmi_get_device_health - 0 ok, 1 minor alarm (degraded), 2 major
 * and 3 critical alarm (unhealthy) - with the chip's current error codes
 * (dcmi_get_device_errorcode_v2) in the reason. Utilisation is the AI-core
 * rate; power is reported by DCMI in 0.1 W.
 *
 * Environment: ASCEND_RT_VISIBLE_DEVICES lists logic ids ("" hides all).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/xalloc.h"
#include "dcmi_abi.h"
#include "hal_int.h"

struct dcmi_fns {
#define X(ret, name, args) ret(*name) args;
	XP_DCMI_FUNCS(X)
#undef X
};

#define REQ(fn) XP_HAL_SYM(struct dcmi_fns, fn, 1)
#define OPT(fn) XP_HAL_SYM(struct dcmi_fns, fn, 0)
static const struct xp_hal_sym dcmi_syms[] = {
	REQ(dcmi_init),
	REQ(dcmi_get_device_num_in_card),
	REQ(dcmi_get_device_logic_id),
	REQ(dcmi_get_device_chip_info),
	REQ(dcmi_get_device_health),
	OPT(dcmi_get_card_list),
	OPT(dcmi_get_card_num_list),
	OPT(dcmi_get_dcmi_version),
	OPT(dcmi_get_driver_version),
	OPT(dcmi_get_device_type),
	OPT(dcmi_get_device_phyid_from_logicid),
	OPT(dcmi_get_device_pcie_info_v2),
	OPT(dcmi_get_device_hbm_info),
	OPT(dcmi_get_device_memory_info_v3),
	OPT(dcmi_get_device_errorcode_v2),
	OPT(dcmi_get_device_utilization_rate),
	OPT(dcmi_get_device_temperature),
	OPT(dcmi_get_device_power_info),
	{ NULL, 0, 0 },
};

struct npu {
	int card, dev, logic;
};

struct xp_hal_family {
	void *dl;
	char lib[256];
	struct dcmi_fns fn;
	char version[64], driver[64];
	unsigned n;
	struct npu npu[XP_MAX_NODE_DEVS];
};

static void asc_close(struct xp_hal_family *f)
{
	if (!f)
		return;
	if (f->dl) /* DCMI has no matching de-init */
		dlclose(f->dl);
	free(f);
}

static int asc_probe(const struct xp_hal_opts *o, struct xp_hal_family **out, struct xp_err *err)
{
	static const char *const names[] = {
		"libdcmi.so",
		"/usr/local/Ascend/driver/lib64/driver/libdcmi.so",
		"/usr/local/dcmi/libdcmi.so",
		NULL,
	};
	struct xp_hal_family *f = XNEW(struct xp_hal_family);
	int rc, r;

	*out = NULL;
	if ((rc = xp_hal_dl_open("ascend", o, names, &f->dl, f->lib, sizeof(f->lib), err)) < 0 ||
	    (rc = xp_hal_dl_bind(f->dl, f->lib, dcmi_syms, &f->fn, err)) < 0) {
		asc_close(f);
		return rc;
	}
	int (*cards_fn)(int *, int *, int) =
		f->fn.dcmi_get_card_list ? f->fn.dcmi_get_card_list : f->fn.dcmi_get_card_num_list;
	if (!cards_fn) {
		rc = xp_errf(err, XP_ENOENT,
			     "%s lacks dcmi_get_card_list and dcmi_get_card_num_list: refusing it",
			     f->lib);
		asc_close(f);
		return rc;
	}
	if ((r = f->fn.dcmi_init()) != DCMI_OK) {
		rc = xp_errf(err, XP_EIO, "%s: dcmi_init: DCMI error %d", f->lib, r);
		asc_close(f);
		return rc;
	}
	if (f->fn.dcmi_get_dcmi_version &&
	    f->fn.dcmi_get_dcmi_version(f->version, sizeof(f->version)) != DCMI_OK)
		f->version[0] = '\0';
	if (f->fn.dcmi_get_driver_version &&
	    f->fn.dcmi_get_driver_version(f->driver, sizeof(f->driver)) != DCMI_OK)
		f->driver[0] = '\0';
	f->version[sizeof(f->version) - 1] = f->driver[sizeof(f->driver) - 1] = '\0';

	int ncards = 0, cards[64];
	r = cards_fn(&ncards, cards, 64);
	if (r != DCMI_OK && cards_fn != f->fn.dcmi_get_card_num_list &&
	    f->fn.dcmi_get_card_num_list) /* exported but not implemented by this driver */
		r = f->fn.dcmi_get_card_num_list(&ncards, cards, 64);
	if (r != DCMI_OK) {
		rc = xp_errf(err, XP_EIO, "%s: listing cards: DCMI error %d", f->lib, r);
		asc_close(f);
		return rc;
	}
	if (ncards > 64)
		ncards = 64;
	for (int ci = 0; ci < ncards; ci++) {
		int ndev = 0;
		if (f->fn.dcmi_get_device_num_in_card(cards[ci], &ndev) != DCMI_OK)
			continue;
		for (int dv = 0; dv < ndev && f->n < XP_MAX_NODE_DEVS; dv++) {
			int type = DCMI_NPU_TYPE, logic = -1;
			if (f->fn.dcmi_get_device_type &&
			    f->fn.dcmi_get_device_type(cards[ci], dv, &type) == DCMI_OK &&
			    type != DCMI_NPU_TYPE)
				continue; /* the card's MCU or CPU */
			if (f->fn.dcmi_get_device_logic_id(&logic, cards[ci], dv) != DCMI_OK)
				logic = -1;
			f->npu[f->n].card = cards[ci];
			f->npu[f->n].dev = dv;
			f->npu[f->n].logic = logic;
			f->n++;
		}
	}
	if (f->n == 0) {
		rc = xp_errf(err, XP_ENOENT, "no Ascend NPUs (%d cards)", ncards);
		asc_close(f);
		return rc;
	}
	*out = f;
	return 0;
}

static int asc_stats(struct xp_hal_family *f, unsigned idx, struct xp_hal_stats *s,
		     struct xp_err *err)
{
	xp_hal_stats_init(s);
	if (idx >= f->n)
		return xp_errf(err, XP_ENOENT, "no NPU %u (%u present)", idx, f->n);
	const struct npu *p = &f->npu[idx];
	unsigned health = 0;
	int r = f->fn.dcmi_get_device_health(p->card, p->dev, &health);
	if (r != DCMI_OK) {
		xp_hal_worse(s, XP_HEALTH_UNKNOWN, "dcmi_get_device_health: DCMI error %d", r);
	} else {
		char codes[96] = "";
		if (health != DCMI_HEALTH_OK && f->fn.dcmi_get_device_errorcode_v2) {
			unsigned list[8];
			int cnt = 0;
			if (f->fn.dcmi_get_device_errorcode_v2(p->card, p->dev, &cnt, list, 8) ==
			    DCMI_OK)
				for (int i = 0; i < cnt && i < 8; i++) {
					size_t l = strlen(codes);
					snprintf(codes + l, sizeof(codes) - l, "%s0x%x",
						 i ? "," : ", error codes ", list[i]);
				}
		}
		switch (health) {
		case DCMI_HEALTH_OK:
			s->health = XP_HEALTH_OK;
			break;
		case DCMI_HEALTH_MINOR:
			xp_hal_worse(s, XP_HEALTH_DEGRADED, "minor alarm%s", codes);
			break;
		case DCMI_HEALTH_MAJOR:
			xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "major alarm%s", codes);
			break;
		case DCMI_HEALTH_CRITICAL:
			xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "critical alarm%s", codes);
			break;
		default:
			xp_hal_worse(s, XP_HEALTH_UNKNOWN, "health state %u", health);
		}
	}
	unsigned pct;
	if (f->fn.dcmi_get_device_utilization_rate &&
	    f->fn.dcmi_get_device_utilization_rate(p->card, p->dev, DCMI_UTIL_AICORE, &pct) ==
		    DCMI_OK &&
	    pct <= 100)
		s->util_pct = (int32_t)pct;
	struct {
		struct dcmi_hbm_info h;
		unsigned char pad[64];
	} hbm;
	memset(&hbm, 0, sizeof(hbm));
	if (f->fn.dcmi_get_device_hbm_info &&
	    f->fn.dcmi_get_device_hbm_info(p->card, p->dev, &hbm.h) == DCMI_OK &&
	    hbm.h.memory_size > 0) {
		s->mem_used_mib = (int64_t)hbm.h.memory_usage;
	} else {
		struct {
			struct dcmi_get_memory_info_stru m;
			unsigned char pad[64];
		} mem;
		memset(&mem, 0, sizeof(mem));
		if (f->fn.dcmi_get_device_memory_info_v3 &&
		    f->fn.dcmi_get_device_memory_info_v3(p->card, p->dev, &mem.m) == DCMI_OK &&
		    mem.m.memory_size >= mem.m.memory_available)
			s->mem_used_mib = (int64_t)(mem.m.memory_size - mem.m.memory_available);
	}
	int v;
	if (f->fn.dcmi_get_device_power_info &&
	    f->fn.dcmi_get_device_power_info(p->card, p->dev, &v) == DCMI_OK && v >= 0)
		s->power_w = v / 10;
	if (f->fn.dcmi_get_device_temperature &&
	    f->fn.dcmi_get_device_temperature(p->card, p->dev, &v) == DCMI_OK)
		s->temp_c = v;
	return 0;
}

static int asc_enumerate(struct xp_hal_family *f, struct xp_cluster *c, struct xp_node *n,
			 struct xp_err *err)
{
	xp_sym vendor = xp_strtab_intern(c->syms, "Huawei");

	for (unsigned i = 0; i < f->n; i++) {
		const struct npu *p = &f->npu[i];
		struct xp_device *d = xp_hal_add_device(n, "ascend", i, err);
		struct xp_hal_stats st;
		char buf[160];

		if (!d)
			return XP_ENOSPC;
		d->cls = XP_CLASS_NPU;
		d->vendor = vendor;
		struct {
			struct dcmi_chip_info ci;
			unsigned char pad[128];
		} chip;
		memset(&chip, 0, sizeof(chip));
		if (f->fn.dcmi_get_device_chip_info(p->card, p->dev, &chip.ci) == DCMI_OK) {
			chip.ci.chip_type[DCMI_MAX_CHIP_NAME_LEN - 1] = '\0';
			chip.ci.chip_name[DCMI_MAX_CHIP_NAME_LEN - 1] = '\0';
			snprintf(buf, sizeof(buf), "%s%s", (const char *)chip.ci.chip_type,
				 (const char *)chip.ci.chip_name);
			char model[160];
			xp_hal_model_name(buf, NULL, model, sizeof(model));
			if (model[0])
				d->model = xp_strtab_intern(c->syms, model);
			if (chip.ci.aicore_cnt)
				xp_hal_attrf(d, "aicore_count", "%u", chip.ci.aicore_cnt);
		}
		struct {
			struct dcmi_hbm_info h;
			unsigned char pad[64];
		} hbm;
		memset(&hbm, 0, sizeof(hbm));
		if (f->fn.dcmi_get_device_hbm_info &&
		    f->fn.dcmi_get_device_hbm_info(p->card, p->dev, &hbm.h) == DCMI_OK &&
		    hbm.h.memory_size > 0) {
			d->mem_mib = hbm.h.memory_size;
		} else {
			struct {
				struct dcmi_get_memory_info_stru m;
				unsigned char pad[64];
			} mem;
			memset(&mem, 0, sizeof(mem));
			if (f->fn.dcmi_get_device_memory_info_v3 &&
			    f->fn.dcmi_get_device_memory_info_v3(p->card, p->dev, &mem.m) ==
				    DCMI_OK)
				d->mem_mib = mem.m.memory_size;
		}
		struct {
			struct dcmi_pcie_info_all pci;
			unsigned char pad[64];
		} pci;
		memset(&pci, 0, sizeof(pci));
		if (f->fn.dcmi_get_device_pcie_info_v2 &&
		    f->fn.dcmi_get_device_pcie_info_v2(p->card, p->dev, &pci.pci) == DCMI_OK &&
		    pci.pci.domain >= 0 && pci.pci.bdf_busid <= 0xff &&
		    pci.pci.bdf_deviceid <= 0x1f && pci.pci.bdf_funcid <= 7) {
			xp_hal_pci_format((unsigned)pci.pci.domain, pci.pci.bdf_busid,
					  pci.pci.bdf_deviceid, pci.pci.bdf_funcid, buf,
					  sizeof(buf));
			d->pci_bus_id = xstrdup(buf);
		}
		xp_hal_attrf(d, "card_id", "%d", p->card);
		xp_hal_attrf(d, "chip_id", "%d", p->dev);
		if (p->logic >= 0)
			xp_hal_attrf(d, "logic_id", "%d", p->logic);
		unsigned phy;
		if (p->logic >= 0 && f->fn.dcmi_get_device_phyid_from_logicid &&
		    f->fn.dcmi_get_device_phyid_from_logicid((unsigned)p->logic, &phy) == DCMI_OK)
			xp_hal_attrf(d, "dev_nodes",
				     "/dev/davinci%u,/dev/davinci_manager,/dev/devmm_svm,"
				     "/dev/hisi_hdc",
				     phy);
		if (f->driver[0])
			xp_hal_attr(d, "driver", f->driver);
		if (f->version[0])
			xp_hal_attr(d, "dcmi_version", f->version);
		asc_stats(f, i, &st, NULL);
		xp_hal_apply_health(d, &st);
	}
	return 0;
}

static int asc_env(struct xp_hal_family *f, const unsigned *idx, unsigned n, struct xp_sb *out)
{
	char num[XP_MAX_NODE_DEVS][12];
	const char *v[XP_MAX_NODE_DEVS] = { NULL };

	if (n > XP_MAX_NODE_DEVS)
		return XP_EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (idx[i] >= f->n)
			return XP_ENOENT;
		int id = f->npu[idx[i]].logic >= 0 ? f->npu[idx[i]].logic : (int)idx[i];
		snprintf(num[i], sizeof(num[i]), "%d", id);
		v[i] = num[i];
	}
	xp_hal_env_line(out, "ASCEND_RT_VISIBLE_DEVICES", v, n);
	return 0;
}

const struct xp_device_ops xp_hal_ascend_ops = {
	.abi = XP_HAL_ABI,
	.name = "ascend",
	.probe = asc_probe,
	.enumerate = asc_enumerate,
	.stats = asc_stats,
	.env = asc_env,
	.close = asc_close,
};
