/*
 * test_hal_mig: MIG through the nvidia family's real dlopen path, against
 * the fake NVML (tests/fakelibs/fake_nvml_mig.c) - issue 21.
 *
 * - Discovery on A100-80GB, H100-80GB (and H200 names) lists the profiles
 *   and placements of src/core/model/mig.c's tables, and exactly what a
 *   brute-force reading of the fake through its own NVML calls gives.
 * - Random create/destroy sequences through xp_hal_mig_* are checked
 *   against the slice lattice (xp_mig_*) as the reference: the fake accepts
 *   exactly the placements the lattice allows and refuses the others with
 *   INSUFFICIENT_RESOURCES (XP_ENOSPC); the listing matches after each step.
 * - IN_USE on destroy while a process runs; a MIG mode change refused while
 *   busy; state that survives a restart (a second process); a GPU not in
 *   MIG mode refused with a clear error.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/model/mig.h"
#include "hal/hal.h"
#include "hal/nvml_abi.h"

extern char **environ;

#define MISSING "/nonexistent/xpool-test/libnone.so"

static char state_path[64];

static void clear_env(void)
{
	char names[64][64];
	int n = 0;
	for (char **e = environ; *e && n < 64; e++)
		if (strncmp(*e, "FAKE_", 5) == 0 || strncmp(*e, "XP_HAL_", 7) == 0) {
			size_t l = strcspn(*e, "=");
			if (l >= sizeof(names[0]))
				continue;
			memcpy(names[n], *e, l);
			names[n++][l] = '\0';
		}
	for (int i = 0; i < n; i++)
		unsetenv(names[i]);
}

/* A fresh environment and a fresh state file per test. */
static int setup(void **state)
{
	(void)state;
	clear_env();
	snprintf(state_path, sizeof(state_path), "/tmp/xp-mig-%d.state", (int)getpid());
	unlink(state_path);
	setenv("FAKE_NVML_STATE", state_path, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(state_path);
	return 0;
}

static struct xp_hal *open_nv(void)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	memset(&o, 0, sizeof(o));
	o.lib_override[0] = "nvidia=" XP_FAKE_NVML;
	o.lib_override[1] = "amd=" MISSING;
	o.lib_override[2] = "ascend=" MISSING;
	o.lib_override[3] = "cambricon=" MISSING;
	o.sysfs_root = "/nonexistent/xpool-test/sysfs";
	struct xp_hal *h = xp_hal_open(&o, &err);
	if (!h)
		fail_msg("open: %s", err.text);
	return h;
}

static struct xp_cluster *discover(struct xp_hal *h)
{
	struct xp_err err = { 0 };
	struct xp_cluster *c = xp_hal_discover(h, "mig-0", NULL, &err);
	if (!c || err.code)
		fail_msg("discover: %s", err.text);
	return c;
}

/* Node device of NVIDIA GPU i. */
static const struct xp_device *gpu(const struct xp_cluster *c, unsigned i, unsigned *dev)
{
	const struct xp_node *n = &c->nodes[0];
	char want[16];
	snprintf(want, sizeof(want), "%u", i);
	for (unsigned d = 0; d < n->ndevs; d++) {
		const char *fam = xp_attrs_get(n->devs[d].attrs, n->devs[d].nattrs, "hal");
		const char *idx = xp_attrs_get(n->devs[d].attrs, n->devs[d].nattrs, "hal_index");
		if (fam && !strcmp(fam, "nvidia") && idx && !strcmp(idx, want)) {
			if (dev)
				*dev = d;
			return &n->devs[d];
		}
	}
	fail_msg("no NVIDIA GPU %u", i);
	return NULL;
}

static const char *attr(const struct xp_device *d, const char *key)
{
	return xp_attrs_get(d->attrs, d->nattrs, key);
}

/* A function of the fake the HAL has loaded (the same library instance). */
static void *fake_sym(const char *name)
{
	void *dl = dlopen(XP_FAKE_NVML, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	assert_non_null(dl);
	void *fn = dlsym(dl, name);
	dlclose(dl);
	assert_non_null(fn);
	return fn;
}

/* The fake's GPU 0 handle. */
static nvmlDevice_t fake_gpu0(void)
{
	nvmlReturn_t (*get)(unsigned, nvmlDevice_t *) = fake_sym("nvmlDeviceGetHandleByIndex_v2");
	nvmlDevice_t d = NULL;
	assert_int_equal(get(0, &d), NVML_SUCCESS);
	return d;
}

/* "a+b,c+d" of the table profile p */
static void table_places(const struct xp_mig_profile *p, char *out, size_t len)
{
	size_t n = 0;
	out[0] = '\0';
	for (unsigned i = 0; i < p->nplace; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%u+%u", i ? "," : "", p->place[i].start,
				      p->place[i].size);
}

/* The placements discovery recorded for profile name ("" when none). */
static void recorded_places(const struct xp_device *d, const char *name, char *out, size_t len)
{
	const char *s = attr(d, "mig_placements");
	size_t nl = strlen(name);
	out[0] = '\0';
	while (s && *s) {
		if (!strncmp(s, name, nl) && s[nl] == ':') {
			size_t l = strcspn(s + nl + 1, ";");
			snprintf(out, len, "%.*s", (int)l, s + nl + 1);
			return;
		}
		s = strchr(s, ';');
		if (s)
			s++;
	}
}

/* Discovery against the model's table and against the fake read index by index. */
static void check_discovery(const char *name, const char *model, unsigned mem_mib)
{
	char buf[64];
	setenv("FAKE_NVML_COUNT", "2", 1);
	setenv("FAKE_NVML_NAME", name, 1);
	snprintf(buf, sizeof(buf), "%u", mem_mib);
	setenv("FAKE_NVML_MEM_MIB", buf, 1);
	setenv("FAKE_NVML_MIG", "0", 1); /* GPU 0 in MIG mode, GPU 1 not */
	const struct xp_mig_table *t = xp_mig_table_find(model);
	assert_non_null(t);
	struct xp_hal *h = open_nv();
	struct xp_cluster *c = discover(h);
	for (unsigned i = 0; i < 2; i++) {
		const struct xp_device *d = gpu(c, i, NULL);
		assert_int_equal(d->mode, i == 0 ? XP_MODE_MIG : XP_MODE_SHARED);
		assert_string_equal(attr(d, "mig_mode"), i == 0 ? "enabled" : "disabled");
		assert_int_equal(d->nparts, XP_MIG_NKINDS);
		for (int k = 0; k < XP_MIG_NKINDS; k++) {
			const struct xp_mig_profile *p = &t->prof[k];
			const struct xp_partition *pt = NULL;
			for (unsigned j = 0; j < d->nparts; j++)
				if (!strcmp(d->parts[j].name, p->name))
					pt = &d->parts[j];
			if (!pt)
				fail_msg("%s: no partition %s", model, p->name);
			assert_int_equal(pt->mem_mib, p->mem_mib);
			assert_int_equal(pt->max_count, p->max_count);
			assert_int_equal(pt->compute_milli, p->compute * XP_MILLI / 7);
			assert_int_equal(xp_mig_slices_for(pt->compute_milli), p->compute);
			char want[128], got[128];
			snprintf(want, sizeof(want), "%s:%u:%u", p->name, p->id, p->sms);
			assert_non_null(strstr(attr(d, "mig_profiles"), want));
			table_places(p, want, sizeof(want));
			recorded_places(d, p->name, got, sizeof(got));
			assert_string_equal(got, want);
		}
	}
	/* brute force: every profile index of the fake, as NVML answers it */
	nvmlReturn_t (*info)(nvmlDevice_t, unsigned, nvmlGpuInstanceProfileInfo_t *) =
		fake_sym("nvmlDeviceGetGpuInstanceProfileInfo");
	nvmlReturn_t (*places)(nvmlDevice_t, unsigned, nvmlGpuInstancePlacement_t *, unsigned *) =
		fake_sym("nvmlDeviceGetGpuInstancePossiblePlacements_v2");
	const struct xp_device *d0 = gpu(c, 0, NULL);
	unsigned seen = 0;
	for (unsigned idx = 0; idx < NVML_GPU_INSTANCE_PROFILE_COUNT_MAX; idx++) {
		nvmlGpuInstanceProfileInfo_t pi;
		nvmlGpuInstancePlacement_t pl[16];
		unsigned n = 16;
		if (info(fake_gpu0(), idx, &pi) != NVML_SUCCESS)
			continue;
		seen++;
		assert_int_equal(places(fake_gpu0(), pi.id, pl, &n), NVML_SUCCESS);
		const struct xp_partition *pt = NULL;
		char want[128] = "", got[128];
		size_t w = 0;
		for (unsigned j = 0; j < n; j++)
			w += (size_t)snprintf(want + w, sizeof(want) - w, "%s%u+%u", j ? "," : "",
					      pl[j].start, pl[j].size);
		for (unsigned j = 0; j < d0->nparts; j++)
			if (d0->parts[j].mem_mib == pi.memorySizeMB &&
			    d0->parts[j].max_count == pi.instanceCount &&
			    d0->parts[j].compute_milli == pi.sliceCount * XP_MILLI / 7) {
				recorded_places(d0, d0->parts[j].name, got, sizeof(got));
				if (!strcmp(got, want))
					pt = &d0->parts[j];
			}
		if (!pt)
			fail_msg("%s: profile index %u (id %u) is not in the discovered partitions",
				 model, idx, pi.id);
	}
	assert_int_equal(seen, d0->nparts);
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

static void test_mig_discovery_a100(void **state)
{
	(void)state;
	check_discovery("NVIDIA A100-SXM4-80GB", "A100-80GB", 81920);
}

static void test_mig_discovery_h100(void **state)
{
	(void)state;
	check_discovery("NVIDIA H100 80GB HBM3", "H100-80GB", 81559);
}

/* H200: names come from NVML (1g.18gb is not ceil(16 GiB)); without the V call they are built */
static void test_mig_discovery_names(void **state)
{
	(void)state;
	check_discovery("NVIDIA H200", "H200-141GB", 143771);
	setup(NULL);
	setenv("FAKE_NVML_COUNT", "1", 1);
	setenv("FAKE_NVML_FAIL", "nvmlDeviceGetGpuInstanceProfileInfoV", 1);
	struct xp_hal *h = open_nv();
	struct xp_cluster *c = discover(h);
	const struct xp_device *d = gpu(c, 0, NULL);
	const struct xp_mig_table *t = xp_mig_table_find("A100-80GB");
	assert_int_equal(d->nparts, XP_MIG_NKINDS);
	for (int k = 0; k < XP_MIG_NKINDS; k++) { /* A100's names are ceil(GiB) */
		int found = 0;
		for (unsigned j = 0; j < d->nparts; j++)
			found |= !strcmp(d->parts[j].name, t->prof[k].name);
		if (!found)
			fail_msg("no partition named %s", t->prof[k].name);
	}
	assert_non_null(strstr(attr(d, "mig_profiles"), "1g.10gb+me:20:14"));
	assert_non_null(strstr(attr(d, "mig_profiles"), "7g.80gb:0:98"));
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The listing of dev equals the reference's instances (profile id, start, size). */
static void check_list(struct xp_hal *h, unsigned dev, const struct xp_mig_gpu *ref)
{
	struct xp_hal_mig m;
	struct xp_err err = { 0 };
	assert_int_equal(xp_hal_mig_list(h, dev, &m, &err), 0);
	assert_true(m.enabled);
	assert_int_equal(m.n, ref->n);
	for (unsigned i = 0; i < m.n; i++) {
		int r = xp_mig_find_inst(ref, m.inst[i].start);
		assert_true(r >= 0);
		const struct xp_mig_profile *p = &ref->t->prof[ref->inst[r].kind];
		assert_int_equal(m.inst[i].profile_id, p->id);
		assert_int_equal(m.inst[i].size, p->place[0].size);
		assert_int_equal(m.inst[i].nci, 1);
		assert_int_equal(strncmp(m.inst[i].uuid, "MIG-", 4), 0);
		for (unsigned j = 0; j < i; j++) {
			assert_int_not_equal(m.inst[j].gi_id, m.inst[i].gi_id);
			assert_string_not_equal(m.inst[j].uuid, m.inst[i].uuid);
		}
	}
}

static void random_ops(const char *name, uint64_t seed, unsigned rounds, unsigned steps)
{
	const struct xp_mig_table *t = xp_mig_table_find(name);
	assert_non_null(t);
	setenv("FAKE_NVML_COUNT", "1", 1);
	setenv("FAKE_NVML_NAME", name, 1);
	setenv("FAKE_NVML_MIG", "0", 1);
	struct xp_hal *h = open_nv();
	struct xp_cluster *c = discover(h);
	unsigned dev, made = 0, refused = 0, gone = 0;
	gpu(c, 0, &dev);
	for (unsigned r = 0; r < rounds; r++) {
		struct xp_mig_gpu ref;
		xp_mig_gpu_init(&ref, t);
		for (unsigned s = 0; s < steps; s++) {
			struct xp_err err = { 0 };
			struct xp_hal_mig_inst in;
			if (ref.n && rng_next(&seed) % 3 == 0) { /* destroy one */
				struct xp_hal_mig m;
				assert_int_equal(xp_hal_mig_list(h, dev, &m, &err), 0);
				unsigned k = (unsigned)(rng_next(&seed) % m.n);
				assert_int_equal(xp_hal_mig_destroy(h, dev, m.inst[k].gi_id, &err),
						 0);
				assert_int_equal(xp_mig_remove(&ref, m.inst[k].start, &err), 0);
				gone++;
			} else { /* create a random kind at a random start */
				int kind = (int)(rng_next(&seed) % XP_MIG_NKINDS);
				unsigned start = (unsigned)(rng_next(&seed) % XP_MIG_MEM_SLICES);
				int ok = xp_mig_can_place(&ref, kind, start);
				int rc = xp_hal_mig_create(h, dev, t->prof[kind].id, start, &in,
							   &err);
				if (ok != (rc == 0))
					fail_msg("%s: %s at %u: lattice says %s, NVML: %s", name,
						 t->prof[kind].name, start, ok ? "yes" : "no",
						 err.text);
				if (rc == 0) {
					assert_int_equal(in.start, start);
					assert_int_equal(in.profile_id, t->prof[kind].id);
					assert_int_equal(strncmp(in.uuid, "MIG-", 4), 0);
					assert_int_equal(xp_mig_place(&ref, kind, start, &err), 0);
					made++;
				} else {
					refused++;
					assert_int_equal(rc, XP_ENOSPC);
					assert_non_null(strstr(err.text, "Insufficient Resources"));
					assert_non_null(
						strstr(err.text,
						       "nvmlDeviceCreateGpuInstanceWithPlacement"));
				}
			}
			check_list(h, dev, &ref);
		}
		/* what NVML says is left agrees with the lattice's room */
		nvmlReturn_t (*cap)(nvmlDevice_t, unsigned, unsigned *) =
			fake_sym("nvmlDeviceGetGpuInstanceRemainingCapacity");
		for (int k = 0; k < XP_MIG_NKINDS; k++) {
			unsigned n = 99;
			assert_int_equal(cap(fake_gpu0(), t->prof[k].id, &n), NVML_SUCCESS);
			assert_int_equal(n, xp_mig_room(&ref, k));
		}
		struct xp_hal_mig m; /* empty the GPU for the next round */
		struct xp_err err = { 0 };
		assert_int_equal(xp_hal_mig_list(h, dev, &m, &err), 0);
		for (unsigned i = 0; i < m.n; i++)
			assert_int_equal(xp_hal_mig_destroy(h, dev, m.inst[i].gi_id, &err), 0);
	}
	/* both outcomes are reached often, not by luck */
	assert_true(made >= rounds * steps / 5 && refused >= rounds * steps / 5 && gone >= rounds);
	struct xp_err err = { 0 };
	assert_int_equal(xp_hal_mig_destroy(h, dev, 77, &err), XP_ENOENT);
	assert_non_null(strstr(err.text, "nvmlDeviceGetGpuInstanceById"));
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

static void test_mig_random_vs_lattice(void **state)
{
	(void)state;
	random_ops("A100-80GB", 0x9e3779b97f4a7c15ULL, 12, 20);
	setup(NULL);
	random_ops("NVIDIA H100 80GB HBM3", 0x2545f4914f6cdd1dULL, 12, 20);
	setup(NULL);
	random_ops("A100-SXM4-40GB", 77, 6, 20);
	setup(NULL);
	random_ops("H200-141GB", 78, 6, 20);
}

static void test_mig_in_use(void **state)
{
	(void)state;
	setenv("FAKE_NVML_COUNT", "1", 1);
	setenv("FAKE_NVML_MIG", "0", 1);
	struct xp_hal *h = open_nv();
	struct xp_cluster *c = discover(h);
	unsigned dev;
	gpu(c, 0, &dev);
	struct xp_err err = { 0 };
	struct xp_hal_mig_inst in;
	assert_int_equal(xp_hal_mig_create(h, dev, 9, 4, &in, &err), 0); /* 3g at 4 */
	char uuid[96];
	snprintf(uuid, sizeof(uuid), "%s", in.uuid);
	setenv("FAKE_NVML_MIG_BUSY", uuid, 1);
	assert_int_equal(xp_hal_mig_destroy(h, dev, in.gi_id, &err), XP_ESTATE);
	assert_non_null(strstr(err.text, "nvmlComputeInstanceDestroy"));
	assert_non_null(strstr(err.text, "In use"));

	/* the GPU instance is still there, with its compute instance */
	struct xp_hal_mig m;
	assert_int_equal(xp_hal_mig_list(h, dev, &m, &err), 0);
	assert_int_equal(m.n, 1);
	assert_int_equal(m.inst[0].nci, 1);
	assert_string_equal(m.inst[0].uuid, uuid);

	/* NVML itself: a GPU instance with a compute instance is IN_USE; a busy GPU keeps its mode
	 */
	nvmlReturn_t (*byid)(nvmlDevice_t, unsigned, nvmlGpuInstance_t *) =
		fake_sym("nvmlDeviceGetGpuInstanceById");
	nvmlReturn_t (*gidestroy)(nvmlGpuInstance_t) = fake_sym("nvmlGpuInstanceDestroy");
	nvmlReturn_t (*setmode)(nvmlDevice_t, unsigned, nvmlReturn_t *) =
		fake_sym("nvmlDeviceSetMigMode");
	nvmlGpuInstance_t gi;
	nvmlReturn_t act;
	assert_int_equal(byid(fake_gpu0(), in.gi_id, &gi), NVML_SUCCESS);
	assert_int_equal(gidestroy(gi), NVML_ERROR_IN_USE);
	assert_int_equal(setmode(fake_gpu0(), NVML_DEVICE_MIG_DISABLE, &act), NVML_ERROR_IN_USE);

	unsetenv("FAKE_NVML_MIG_BUSY");
	assert_int_equal(setmode(fake_gpu0(), NVML_DEVICE_MIG_DISABLE, &act), NVML_ERROR_IN_USE);
	assert_int_equal(xp_hal_mig_destroy(h, dev, in.gi_id, &err), 0);
	assert_int_equal(xp_hal_mig_list(h, dev, &m, &err), 0);
	assert_int_equal(m.n, 0);
	setenv("FAKE_NVML_BUSY", "0", 1);
	assert_int_equal(setmode(fake_gpu0(), NVML_DEVICE_MIG_DISABLE, &act), NVML_ERROR_IN_USE);
	unsetenv("FAKE_NVML_BUSY");
	/* the test (an administrator), not xpool, turns MIG off: then creating is refused */
	assert_int_equal(setmode(fake_gpu0(), NVML_DEVICE_MIG_DISABLE, &act), NVML_SUCCESS);
	assert_int_equal(act, NVML_SUCCESS);
	assert_int_equal(xp_hal_mig_create(h, dev, 9, 0, &in, &err), XP_ESTATE);
	assert_non_null(strstr(err.text, "not in MIG mode"));
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

/* Another process (the agent before its restart) creates; this one sees it. */
static void test_mig_restart(void **state)
{
	(void)state;
	setenv("FAKE_NVML_COUNT", "2", 1);
	setenv("FAKE_NVML_MIG", "0,1", 1);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct xp_hal *h = open_nv();
		struct xp_cluster *c = discover(h);
		unsigned dev;
		gpu(c, 1, &dev);
		struct xp_err err = { 0 };
		struct xp_hal_mig_inst a, b;
		int rc = xp_hal_mig_create(h, dev, 9, 4, &a, &err) ||
			 xp_hal_mig_create(h, dev, 19, 0, &b, &err);
		if (rc)
			fprintf(stderr, "child: %s\n", err.text);
		xp_cluster_destroy(c);
		xp_hal_close(h);
		_exit(rc ? 1 : 0);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	struct xp_hal *h = open_nv();
	struct xp_cluster *c = discover(h);
	unsigned dev;
	const struct xp_device *d = gpu(c, 1, &dev);
	struct xp_hal_mig m;
	struct xp_err err = { 0 };
	assert_int_equal(xp_hal_mig_list(h, dev, &m, &err), 0);
	assert_int_equal(m.n, 2);
	unsigned one = m.inst[0].profile_id == 19 ? 0 : 1, three = 1 - one;
	assert_int_equal(m.inst[one].start, 0);
	assert_int_equal(m.inst[three].profile_id, 9);
	assert_int_equal(m.inst[three].start, 4);
	char want[256];
	snprintf(want, sizeof(want), "%s", m.inst[0].uuid);
	assert_non_null(strstr(attr(d, "mig_instances"), m.inst[0].uuid));
	assert_non_null(strstr(attr(d, "mig_instances"), m.inst[1].uuid));
	snprintf(want, sizeof(want), "3g.40gb:4+4:%s", m.inst[three].uuid);
	assert_non_null(strstr(attr(d, "mig_layout"), want));
	/* the task environment names the MIG devices */
	struct xp_sb env;
	xp_sb_init(&env);
	assert_int_equal(xp_hal_env(h, &dev, 1, &env, &err), 0);
	assert_non_null(strstr(env.s, m.inst[0].uuid));
	assert_non_null(strstr(env.s, m.inst[1].uuid));
	xp_sb_free(&env);
	/* GPU 0 is untouched */
	gpu(c, 0, &dev);
	assert_int_equal(xp_hal_mig_list(h, dev, &m, &err), 0);
	assert_int_equal(m.n, 0);
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

static void test_mig_mode_off(void **state)
{
	(void)state;
	setenv("FAKE_NVML_COUNT", "1", 1);
	struct xp_hal *h = open_nv();
	struct xp_cluster *c = discover(h);
	unsigned dev;
	const struct xp_device *d = gpu(c, 0, &dev);
	assert_int_equal(d->mode, XP_MODE_SHARED);
	assert_int_equal(d->nparts, XP_MIG_NKINDS); /* capable: its profiles are listed */
	assert_null(attr(d, "mig_instances"));
	struct xp_err err = { 0 };
	struct xp_hal_mig m;
	struct xp_hal_mig_inst in;
	assert_int_equal(xp_hal_mig_list(h, dev, &m, &err), 0);
	assert_false(m.enabled);
	assert_int_equal(m.n, 0);
	assert_int_equal(xp_hal_mig_create(h, dev, 0, 0, &in, &err), XP_ESTATE);
	assert_non_null(strstr(err.text, "nvidia: GPU 0"));
	assert_non_null(strstr(err.text, "is not in MIG mode"));
	assert_non_null(strstr(err.text, "only on nodes an admin allowed"));
	assert_int_equal(xp_hal_mig_destroy(h, dev, 1, &err), XP_ESTATE);
	assert_int_equal(xp_hal_mig_list(h, 99, &m, &err), XP_ENOENT);
	xp_cluster_destroy(c);
	xp_hal_close(h);

	/* a GPU without MIG at all */
	setup(NULL);
	setenv("FAKE_NVML_COUNT", "1", 1);
	setenv("FAKE_NVML_NAME", "Tesla T4", 1);
	h = open_nv();
	c = discover(h);
	d = gpu(c, 0, &dev);
	assert_int_equal(d->nparts, 0);
	assert_null(attr(d, "mig_mode"));
	assert_int_equal(xp_hal_mig_create(h, dev, 9, 0, &in, &err), XP_EUNSUPP);
	assert_non_null(strstr(err.text, "nvmlDeviceGetMigMode(GPU 0): Not Supported"));
	/* an unknown profile id names the valid ones */
	xp_cluster_destroy(c);
	xp_hal_close(h);
	setup(NULL);
	setenv("FAKE_NVML_COUNT", "1", 1);
	setenv("FAKE_NVML_MIG", "0", 1);
	h = open_nv();
	c = discover(h);
	gpu(c, 0, &dev);
	assert_int_equal(xp_hal_mig_create(h, dev, 42, 0, &in, &err), XP_EINVAL);
	assert_non_null(strstr(err.text, "no GPU instance profile id 42"));
	assert_non_null(strstr(err.text, "9 (3g.40gb)"));
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

/* The fake's own calls the HAL does not make: creating at the first free placement, the V
 * call's version check, a mode change left pending until a reset. */
static void test_mig_fake_calls(void **state)
{
	(void)state;
	setenv("FAKE_NVML_COUNT", "1", 1);
	setenv("FAKE_NVML_MIG_DEFER", "0", 1);
	struct xp_hal *h = open_nv();
	nvmlReturn_t (*create)(nvmlDevice_t, unsigned, nvmlGpuInstance_t *) =
		fake_sym("nvmlDeviceCreateGpuInstance");
	nvmlReturn_t (*getinfo)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t *) =
		fake_sym("nvmlGpuInstanceGetInfo");
	nvmlReturn_t (*setmode)(nvmlDevice_t, unsigned, nvmlReturn_t *) =
		fake_sym("nvmlDeviceSetMigMode");
	nvmlReturn_t (*infov)(nvmlDevice_t, unsigned, nvmlGpuInstanceProfileInfo_v2_t *) =
		fake_sym("nvmlDeviceGetGpuInstanceProfileInfoV");
	nvmlGpuInstance_t gi;
	nvmlGpuInstanceInfo_t info;
	nvmlReturn_t act;
	nvmlGpuInstanceProfileInfo_v2_t v2;

	memset(&v2, 0, sizeof(v2));
	assert_int_equal(infov(fake_gpu0(), NVML_GPU_INSTANCE_PROFILE_3_SLICE, &v2),
			 NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	v2.version = nvmlGpuInstanceProfileInfo_v2;
	assert_int_equal(infov(fake_gpu0(), NVML_GPU_INSTANCE_PROFILE_3_SLICE, &v2), NVML_SUCCESS);
	assert_int_equal(v2.id, 9);
	assert_string_equal(v2.name, "MIG 3g.40gb");

	/* MIG off: no instances; turning it on waits for a reset here */
	assert_int_equal(create(fake_gpu0(), 9, &gi), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(setmode(fake_gpu0(), NVML_DEVICE_MIG_ENABLE, &act), NVML_SUCCESS);
	assert_int_equal(act, NVML_ERROR_RESET_REQUIRED);
	struct xp_cluster *c = discover(h);
	unsigned dev;
	const struct xp_device *d = gpu(c, 0, &dev);
	assert_string_equal(attr(d, "mig_mode"), "disabled");
	assert_string_equal(attr(d, "mig_mode_pending"), "enabled");
	struct xp_hal_mig m;
	struct xp_hal_mig_inst in;
	struct xp_err err = { 0 };
	assert_int_equal(xp_hal_mig_list(h, dev, &m, &err), 0);
	assert_true(!m.enabled && m.pending);
	assert_int_equal(xp_hal_mig_create(h, dev, 9, 0, &in, &err), XP_ESTATE);
	assert_non_null(strstr(err.text, "enabled at the next reset"));
	xp_cluster_destroy(c);

	/* after the "reset": two 3g at the first free starts, then no room */
	unsetenv("FAKE_NVML_MIG_DEFER");
	assert_int_equal(setmode(fake_gpu0(), NVML_DEVICE_MIG_ENABLE, &act), NVML_SUCCESS);
	assert_int_equal(act, NVML_SUCCESS);
	for (unsigned k = 0; k < 2; k++) {
		assert_int_equal(create(fake_gpu0(), 9, &gi), NVML_SUCCESS);
		assert_int_equal(getinfo(gi, &info), NVML_SUCCESS);
		assert_int_equal(info.placement.start, 4 * k);
		assert_int_equal(info.placement.size, 4);
		assert_int_equal(info.profileId, 9);
	}
	assert_int_equal(create(fake_gpu0(), 9, &gi), NVML_ERROR_INSUFFICIENT_RESOURCES);
	assert_int_equal(create(fake_gpu0(), 19, &gi), NVML_ERROR_INSUFFICIENT_RESOURCES);
	xp_hal_close(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mig_discovery_a100, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mig_discovery_h100, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mig_discovery_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mig_random_vs_lattice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mig_in_use, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mig_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mig_mode_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mig_fake_calls, setup, teardown),
	};
	return xp_run_tests(tests, NULL, NULL);
}
