/*
 * mig: the MIG profile tables and the slice lattice (mig.h).
 *
 * Sources of the tables (docs/design/mig.md has the detail): profile ids,
 * names, instance counts, memory (GiB x 1024) and SMs as `nvidia-smi mig
 * -lgip` prints them in NVIDIA's MIG user guide and in the dumps of
 * mig-parted#120 (H200) and gpu-operator#903; placements are the A100-40GB
 * table of the MIG user guide (issue 21), used for every model.
 *
 * The lattice is a byte per resource: bit i of mem is memory slice i. A
 * placement {start, size} is the mask ((1 << size) - 1) << start. The room
 * for a kind (how many more instances fit together) is found greedily by
 * start: the placements of one kind have one size and are aligned, so
 * taking the lowest free one never loses a later one (interval scheduling
 * by earliest end); tests check it against exhaustive search.
 */
#include "mig.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "model.h"

/* clang-format off */
/* the A100 placement pattern, per kind */
#define P1   7, { { 0, 1 }, { 1, 1 }, { 2, 1 }, { 3, 1 }, { 4, 1 }, { 5, 1 }, { 6, 1 } }
#define P1X2 4, { { 0, 2 }, { 2, 2 }, { 4, 2 }, { 6, 2 } }
#define P2   3, { { 0, 2 }, { 2, 2 }, { 4, 2 } }
#define P3   2, { { 0, 4 }, { 4, 4 } }
#define P4   1, { { 0, 4 } }
#define P7   1, { { 0, 8 } }

/* one row: id, name, compute, MiB, SMs, max count, placements */
#define ROW1(name, mib, sms)	{ 19, name, 1, mib, sms, 7, P1 }
#define ROW1ME(name, mib, sms)	{ 20, name, 1, mib, sms, 1, P1 }
#define ROW1X2(name, mib, sms)	{ 15, name, 1, mib, sms, 4, P1X2 }
#define ROW2(name, mib, sms)	{ 14, name, 2, mib, sms, 3, P2 }
#define ROW3(name, mib, sms)	{ 9, name, 3, mib, sms, 2, P3 }
#define ROW4(name, mib, sms)	{ 5, name, 4, mib, sms, 1, P4 }
#define ROW7(name, mib, sms)	{ 0, name, 7, mib, sms, 1, P7 }

static const struct xp_mig_table tables[] = {
	{ "A100-40GB",
	  40960,
	  { ROW1("1g.5gb", 4864, 14), ROW1ME("1g.5gb+me", 4864, 14), ROW1X2("1g.10gb", 9984, 14),
	    ROW2("2g.10gb", 9984, 28), ROW3("3g.20gb", 20096, 42), ROW4("4g.20gb", 20096, 56),
	    ROW7("7g.40gb", 40448, 98) } },
	{ "A100-80GB",
	  81920,
	  { ROW1("1g.10gb", 9728, 14), ROW1ME("1g.10gb+me", 9728, 14),
	    ROW1X2("1g.20gb", 19968, 14), ROW2("2g.20gb", 19968, 28), ROW3("3g.40gb", 40192, 42),
	    ROW4("4g.40gb", 40192, 56), ROW7("7g.80gb", 81152, 98) } },
	{ "H100-80GB",
	  81920,
	  { ROW1("1g.10gb", 9984, 16), ROW1ME("1g.10gb+me", 9984, 16),
	    ROW1X2("1g.20gb", 20096, 26), ROW2("2g.20gb", 20096, 32), ROW3("3g.40gb", 40448, 60),
	    ROW4("4g.40gb", 40448, 64), ROW7("7g.80gb", 81152, 132) } },
	/* 7g.141gb's memory is not in the mig-parted#120 excerpt: 2 x 3g.71gb */
	{ "H200-141GB",
	  144384,
	  { ROW1("1g.18gb", 16384, 16), ROW1ME("1g.18gb+me", 16384, 16),
	    ROW1X2("1g.35gb", 33024, 26), ROW2("2g.35gb", 33024, 32), ROW3("3g.71gb", 71168, 60),
	    ROW4("4g.71gb", 71168, 64), ROW7("7g.141gb", 142336, 132) } },
};
/* clang-format on */
#define NTABLES (sizeof(tables) / sizeof(tables[0]))

size_t xp_mig_ntables(void)
{
	return NTABLES;
}

const struct xp_mig_table *xp_mig_table_at(size_t i)
{
	return i < NTABLES ? &tables[i] : NULL;
}

size_t xp_mig_table_index(const struct xp_mig_table *t)
{
	return (size_t)(t - tables);
}

/* the first number in s followed by "gb" (any case), or 0 */
static unsigned gb_in(const char *s)
{
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p) || (p > s && isdigit((unsigned char)p[-1])))
			continue;
		unsigned v = 0;
		const char *q = p;
		while (isdigit((unsigned char)*q) && v < 100000)
			v = v * 10 + (unsigned)(*q++ - '0');
		while (*q == ' ')
			q++;
		if (tolower((unsigned char)q[0]) == 'g' && tolower((unsigned char)q[1]) == 'b')
			return v;
	}
	return 0;
}

/* does s contain word (any case)? */
static int has(const char *s, const char *word)
{
	size_t n = strlen(word);
	for (; *s; s++)
		if (!strncasecmp(s, word, n))
			return 1;
	return 0;
}

const struct xp_mig_table *xp_mig_table_find(const char *model)
{
	static const struct {
		const char *family;
		unsigned gb, dflt;
		size_t table;
	} rules[] = { { "A100", 40, 1, 0 },
		      { "A100", 80, 0, 1 },
		      { "H100", 80, 1, 2 },
		      { "H200", 141, 1, 3 } };
	if (!model || (has(model, "NVL") && has(model, "H100")))
		return NULL; /* H100 NVL: 94 GB, its own profiles */
	unsigned gb = gb_in(model);
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (has(model, rules[i].family) && (gb ? gb == rules[i].gb : rules[i].dflt))
			return &tables[rules[i].table];
	return NULL;
}

int xp_mig_profile_find(const struct xp_mig_table *t, const char *name, struct xp_err *err)
{
	char valid[256];
	size_t len = 0;
	for (int k = 0; k < XP_MIG_NKINDS; k++)
		if (name && !strcasecmp(name, t->prof[k].name))
			return k;
	valid[0] = 0;
	for (int k = 0; k < XP_MIG_NKINDS; k++)
		len += (size_t)snprintf(valid + len, sizeof(valid) - len, "%s%s", k ? ", " : "",
					t->prof[k].name);
	return xp_errf(err, XP_ENOENT, "unknown MIG profile '%s' on %s (valid: %s)",
		       name ? name : "", t->model, valid);
}

unsigned xp_mig_kind_id(int kind)
{
	return tables[0].prof[kind % XP_MIG_NKINDS].id;
}

unsigned xp_mig_kind_compute(int kind)
{
	return kind >= 0 && kind < XP_MIG_NKINDS ? xp_mig_table_at(0)->prof[kind].compute : 0;
}

int xp_mig_kind_of_id(unsigned id)
{
	for (int k = 0; k < XP_MIG_NKINDS; k++)
		if (tables[0].prof[k].id == id)
			return k;
	return -1;
}

const struct xp_mig_profile *xp_mig_profile_any(const char *name, int *kind)
{
	for (size_t i = 0; name && i < xp_mig_ntables(); i++)
		for (int k = 0; k < XP_MIG_NKINDS; k++)
			if (!strcasecmp(name, tables[i].prof[k].name)) {
				if (kind)
					*kind = k;
				return &tables[i].prof[k];
			}
	return NULL;
}

size_t xp_mig_all_names(char *buf, size_t len)
{
	size_t n = 0;
	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < xp_mig_ntables(); i++)
		for (int k = 0; k < XP_MIG_NKINDS; k++) {
			const char *nm = tables[i].prof[k].name;
			int seen = 0;
			for (size_t j = 0; j < i && !seen; j++)
				for (int l = 0; l < XP_MIG_NKINDS && !seen; l++)
					seen = !strcasecmp(nm, tables[j].prof[l].name);
			for (int l = 0; l < k && !seen; l++)
				seen = !strcasecmp(nm, tables[i].prof[l].name);
			if (!seen && n < len)
				n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", nm);
		}
	return n < len ? n : (len ? len - 1 : 0);
}

unsigned xp_mig_slices_for(uint32_t compute_milli)
{
	unsigned s = (unsigned)(((uint64_t)compute_milli * XP_MIG_COMPUTE_SLICES + XP_MILLI - 1) /
				XP_MILLI);
	return s ? s : 1;
}

int xp_mig_smallest(const struct xp_mig_table *t, uint32_t compute_milli, uint64_t mem_mib)
{
	unsigned need = xp_mig_slices_for(compute_milli);
	int best = -1;
	for (int k = 0; k < XP_MIG_NKINDS; k++) {
		const struct xp_mig_profile *p = &t->prof[k], *b = best < 0 ? NULL : &t->prof[best];
		if (k == XP_MIG_1G_ME || p->compute < need || p->mem_mib < mem_mib)
			continue;
		if (!b || p->compute < b->compute ||
		    (p->compute == b->compute &&
		     (p->mem_mib < b->mem_mib ||
		      (p->mem_mib == b->mem_mib && p->place[0].size < b->place[0].size))))
			best = k;
	}
	return best;
}

void xp_mig_gpu_init(struct xp_mig_gpu *g, const struct xp_mig_table *t)
{
	memset(g, 0, sizeof(*g));
	g->t = t;
}

static uint8_t span(unsigned start, unsigned size)
{
	return (uint8_t)(((1u << size) - 1) << start);
}

static uint8_t compute_span(unsigned start, unsigned compute)
{
	unsigned end = start + compute;
	if (end > XP_MIG_COMPUTE_SLICES)
		end = XP_MIG_COMPUTE_SLICES;
	return start >= end ? 0 : span(start, end - start);
}

static unsigned count_kind(const struct xp_mig_gpu *g, int kind)
{
	unsigned n = 0;
	for (unsigned i = 0; i < g->n; i++)
		n += g->inst[i].kind == kind;
	return n;
}

/* the placement of kind at start, or NULL when it has none there */
static const struct xp_mig_placement *placement_at(const struct xp_mig_profile *p, unsigned start)
{
	for (unsigned i = 0; i < p->nplace; i++)
		if (p->place[i].start == start)
			return &p->place[i];
	return NULL;
}

int xp_mig_can_place(const struct xp_mig_gpu *g, int kind, unsigned start)
{
	if (kind < 0 || kind >= XP_MIG_NKINDS)
		return 0;
	const struct xp_mig_profile *p = &g->t->prof[kind];
	const struct xp_mig_placement *pl = placement_at(p, start);
	return pl && !(g->mem & span(start, pl->size)) &&
	       !(g->compute & compute_span(start, p->compute)) &&
	       count_kind(g, kind) < p->max_count;
}

size_t xp_mig_free_placements(const struct xp_mig_gpu *g, int kind, struct xp_mig_placement *out)
{
	size_t n = 0;
	if (kind < 0 || kind >= XP_MIG_NKINDS)
		return 0;
	const struct xp_mig_profile *p = &g->t->prof[kind];
	for (unsigned i = 0; i < p->nplace; i++)
		if (xp_mig_can_place(g, kind, p->place[i].start)) {
			if (out)
				out[n] = p->place[i];
			n++;
		}
	return n;
}

int xp_mig_place(struct xp_mig_gpu *g, int kind, unsigned start, struct xp_err *err)
{
	if (kind < 0 || kind >= XP_MIG_NKINDS)
		return xp_errf(err, XP_EINVAL, "MIG profile kind %d out of range", kind);
	const struct xp_mig_profile *p = &g->t->prof[kind];
	const struct xp_mig_placement *pl = placement_at(p, start);
	if (!pl)
		return xp_errf(err, XP_ENOSPC, "%s on %s has no placement at start %u", p->name,
			       g->t->model, start);
	if (!xp_mig_can_place(g, kind, start))
		return xp_errf(err, XP_ENOSPC, "%s at {%u,%u} on %s: %s", p->name, start, pl->size,
			       g->t->model,
			       count_kind(g, kind) >= p->max_count ? "at its maximum count"
								   : "overlaps an instance");
	g->mem |= span(start, pl->size);
	g->compute |= compute_span(start, p->compute);
	g->inst[g->n].kind = (uint8_t)kind;
	g->inst[g->n].start = (uint8_t)start;
	g->n++;
	return 0;
}

int xp_mig_find_inst(const struct xp_mig_gpu *g, unsigned start)
{
	for (unsigned i = 0; i < g->n; i++)
		if (g->inst[i].start == start)
			return (int)i;
	return -1;
}

int xp_mig_remove(struct xp_mig_gpu *g, unsigned start, struct xp_err *err)
{
	int i = xp_mig_find_inst(g, start);
	if (i < 0)
		return xp_errf(err, XP_ENOENT, "no MIG instance at start %u on %s", start,
			       g->t->model);
	const struct xp_mig_profile *p = &g->t->prof[g->inst[i].kind];
	g->mem &= (uint8_t)~span(start, placement_at(p, start)->size);
	g->compute &= (uint8_t)~compute_span(start, p->compute);
	g->inst[i] = g->inst[--g->n];
	return 0;
}

int xp_mig_largest(const struct xp_mig_gpu *g)
{
	int best = -1;
	for (int k = 0; k < XP_MIG_NKINDS; k++) {
		const struct xp_mig_profile *p = &g->t->prof[k];
		if (!xp_mig_free_placements(g, k, NULL))
			continue;
		if (best < 0 || p->compute > g->t->prof[best].compute ||
		    (p->compute == g->t->prof[best].compute &&
		     p->mem_mib > g->t->prof[best].mem_mib))
			best = k;
	}
	return best;
}

unsigned xp_mig_room(const struct xp_mig_gpu *g, int kind)
{
	const struct xp_mig_profile *p = &g->t->prof[kind];
	unsigned have = count_kind(g, kind), n = 0;
	uint8_t mem = g->mem, cmp = g->compute;
	for (unsigned i = 0; i < p->nplace && have + n < p->max_count; i++) {
		uint8_t m = span(p->place[i].start, p->place[i].size),
			c = compute_span(p->place[i].start, p->compute);
		if (!(mem & m) && !(cmp & c)) {
			mem |= m;
			cmp |= c;
			n++;
		}
	}
	return n;
}

unsigned xp_mig_free_compute(const struct xp_mig_gpu *g)
{
	return XP_MIG_COMPUTE_SLICES - (unsigned)__builtin_popcount(g->compute);
}

int xp_mig_layout(struct xp_mig_gpu *g, const char *layout, struct xp_err *err)
{
	static const struct {
		const char *name;
		uint8_t n;
		struct xp_mig_inst inst[XP_MIG_COMPUTE_SLICES];
	} layouts[] = {
		{ "all-1g",
		  7,
		  { { 0, 0 }, { 0, 1 }, { 0, 2 }, { 0, 3 }, { 0, 4 }, { 0, 5 }, { 0, 6 } } },
		{ "all-7g", 1, { { XP_MIG_7G, 0 } } },
		{ "all-balanced", 4, { { 0, 0 }, { 0, 1 }, { XP_MIG_2G, 2 }, { XP_MIG_3G, 4 } } },
	};
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		if (!layout || strcmp(layout, layouts[i].name))
			continue;
		xp_mig_gpu_init(g, g->t);
		for (unsigned j = 0; j < layouts[i].n; j++) {
			int rc = xp_mig_place(g, layouts[i].inst[j].kind, layouts[i].inst[j].start,
					      err);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	return xp_errf(err, XP_EINVAL,
		       "unknown MIG layout '%s' (valid: all-balanced, all-1g, all-7g)",
		       layout ? layout : "");
}
