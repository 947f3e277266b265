/*
 * index: per-shape max-trees of node scores, so a decision considers every
 * feasible node without rescoring them all.
 *
 * A policy's score of node n for a shape depends only on n's state and the
 * shape (policy.h). For each recently asked shape the index keeps a binary
 * max-tree over rank slots: leaf = the node's score, or -1 when the node
 * cannot take the shape (down, CPU short, too few fitting devices); inner
 * node = max of its children. One tree over the same slots holds each
 * subtree's largest free host memory, the only part of a request outside
 * the shape.
 *
 * Changes are lazy. Every commit, release or health change appends the
 * node's slot to a ring log; a shape's tree records how far into the log it
 * has caught up. When a shape is asked again it rescores only the slots
 * logged since (deduplicated with a stamp array), each in O(log N) up its
 * path, stopping early once a parent is unchanged. A tree that fell more
 * than a ring behind, or was never built, is rebuilt in O(N).
 *
 * The query walks down to the highest score, preferring the child with the
 * higher max and, on equal max, the left (lower-rank) child; subtrees whose
 * max is below the best found, or equal to it but entirely to its right,
 * or without a node with enough memory, are pruned. Without a memory
 * constraint that binds this is one root-to-leaf path.
 *
 * Trees are int16 (scores are 0..score_max <= 30000). The number of trees
 * is bounded by opts.index_bytes; the least recently used is evicted.
 *
 * Memo (policies with a batch optimiser only). A search commits and
 * releases the same allocations over and over, so a node keeps returning
 * to a state its leaf was already scored in. Each leaf then remembers its
 * last XP_MEMO (node-state key, leaf value) pairs and reuses a value whose
 * key matches: the key (xp_nstate.key) hashes everything a leaf reads, so
 * a stale value would need a 64-bit hash collision. The
 * memo is cleared with the tree's slots' meaning: on a new shape in the
 * entry and on xp_index_reset() (ranks or M changed).
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"

#define MAX_ENTRIES 512

struct entry {
	struct xp_shape shape;
	int16_t *tree;
	uint64_t *mkey; /* memo: [XP_MEMO * slot + i], most recent first; 0 = empty */
	int16_t *mval;
	uint8_t memo_ok;
	uint64_t cursor;
	uint64_t last_use;
	uint32_t hash;
	uint8_t live, built;
};

struct xp_index {
	uint32_t cap;	/* leaves, a power of two >= nnodes */
	uint32_t depth; /* log2(cap) */
	int64_t *memtree;
	uint32_t *log;
	uint64_t head;
	uint32_t logmask;
	struct entry *ent;
	size_t nent, maxent;
	uint32_t *stamp;
	uint32_t gen;
	uint64_t clock;
	int memo; /* leaves keep a memo (the policy has a batch optimiser) */
};

static uint32_t shape_hash(const struct xp_request *r)
{
	uint64_t h = 1469598103934665603ULL;
#define MIX(x)                                                                                     \
	do {                                                                                       \
		h ^= (uint64_t)(x);                                                                \
		h *= 1099511628211ULL;                                                             \
	} while (0)
	MIX(r->cpu_milli);
	MIX(r->dev_count);
	MIX(r->dev_milli);
	MIX(r->by_mem);
	MIX(r->dev_mem_mib);
	MIX(r->node);
	if (r->dev_count) {
		MIX(r->topo);
		MIX(r->sel.cls);
		MIX(r->sel.vendor);
		MIX(r->sel.min_mem_mib);
		MIX(r->sel.min_cc);
		for (int i = 0; i < r->sel.nmodels; i++)
			MIX(r->sel.models[i]);
	}
#undef MIX
	return (uint32_t)(h ^ (h >> 32));
}

static void mem_leaf(struct xp_sched *s, struct xp_index *x, uint32_t slot)
{
	uint32_t n = s->slot_node[slot];
	uint32_t v = x->cap + slot;
	x->memtree[v] = s->ns[n].up ? s->ns[n].mem_free : -1;
	for (v >>= 1; v; v >>= 1) {
		int64_t a = x->memtree[2 * v], b = x->memtree[2 * v + 1];
		int64_t m = a > b ? a : b;
		if (x->memtree[v] == m)
			break;
		x->memtree[v] = m;
	}
}

static void mem_build(struct xp_sched *s, struct xp_index *x)
{
	for (uint32_t i = 0; i < x->cap; i++) {
		uint32_t n = i < s->nnodes ? s->slot_node[i] : 0;
		x->memtree[x->cap + i] = i < s->nnodes && s->ns[n].up ? s->ns[n].mem_free : -1;
	}
	for (uint32_t v = x->cap - 1; v >= 1; v--) {
		int64_t a = x->memtree[2 * v], b = x->memtree[2 * v + 1];
		x->memtree[v] = a > b ? a : b;
	}
}

struct xp_index *xp_index_create(const struct xp_sched *s)
{
	struct xp_index *x = XNEW(struct xp_index);
	size_t budget = s->opts.index_bytes ? s->opts.index_bytes : (size_t)256 << 20;
	uint32_t logsz = 1024;

	x->cap = 1;
	while (x->cap < s->nnodes)
		x->cap <<= 1, x->depth++;
	while (logsz < 2 * x->cap)
		logsz <<= 1;
	x->log = XNEWV(uint32_t, logsz);
	x->logmask = logsz - 1;
	x->memtree = XNEWV(int64_t, 2 * (size_t)x->cap);
	x->stamp = XNEWV(uint32_t, x->cap);
	x->memo = s->pol->optimise != NULL;
	x->maxent =
		budget /
		(2 * (size_t)x->cap * sizeof(int16_t) +
		 (x->memo ? XP_MEMO * (size_t)x->cap * (sizeof(uint64_t) + sizeof(int16_t)) : 0));
	if (x->maxent > MAX_ENTRIES)
		x->maxent = MAX_ENTRIES;
	if (x->maxent < 4)
		x->maxent = 4;
	x->ent = XNEWV(struct entry, x->maxent);
	mem_build((struct xp_sched *)s, x);
	return x;
}

void xp_index_destroy(struct xp_index *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->nent; i++) {
		xp_shape_free(&x->ent[i].shape);
		free(x->ent[i].tree);
		free(x->ent[i].mkey);
		free(x->ent[i].mval);
	}
	free(x->ent);
	free(x->log);
	free(x->memtree);
	free(x->stamp);
	free(x);
}

void xp_index_node_changed(struct xp_sched *s, uint32_t n)
{
	struct xp_index *x = s->idx;
	uint32_t slot = s->ns[n].slot;
	mem_leaf(s, x, slot);
	/* no de-duplication here: a tree may already have consumed the last
	 * entry; refresh() skips repeats within one catch-up instead */
	x->log[x->head++ & x->logmask] = slot;
}

void xp_index_reset(struct xp_sched *s)
{
	struct xp_index *x = s->idx;
	for (size_t i = 0; i < x->nent; i++)
		x->ent[i].built = x->ent[i].memo_ok = 0;
	mem_build(s, x);
}

static int16_t leaf(struct xp_sched *s, const struct xp_shape *m, uint32_t n)
{
	int32_t sc;
	if (xp_node_why(s, n, m) != XP_WHY_FITS)
		return -1;
	sc = s->pol->score(s, n, m);
	if (sc < 0)
		sc = 0;
	if (sc > s->pol->score_max)
		sc = s->pol->score_max;
	return (int16_t)sc;
}

/* The leaf of slot, through the entry's memo when the index keeps one. */
static int16_t leaf_at(struct xp_sched *s, struct xp_index *x, struct entry *e, uint32_t slot)
{
	uint32_t n = s->slot_node[slot];
	if (!x->memo)
		return leaf(s, &e->shape, n);
	uint64_t key = s->ns[n].key, *k = &e->mkey[XP_MEMO * (size_t)slot];
	int16_t *v = &e->mval[XP_MEMO * (size_t)slot], val;
	int i;
	for (i = 0; i < XP_MEMO - 1 && k[i] != key; i++)
		;
	val = k[i] == key ? v[i] : leaf(s, &e->shape, n);
	memmove(k + 1, k, (size_t)i * sizeof(*k)); /* most recent first */
	memmove(v + 1, v, (size_t)i * sizeof(*v));
	k[0] = key;
	v[0] = val;
	return val;
}

static void build(struct xp_sched *s, struct xp_index *x, struct entry *e)
{
	int16_t *t = e->tree;
	if (x->memo && !e->memo_ok) {
		memset(e->mkey, 0, XP_MEMO * (size_t)x->cap * sizeof(*e->mkey));
		e->memo_ok = 1;
	}
	for (uint32_t i = 0; i < x->cap; i++)
		t[x->cap + i] = i < s->nnodes ? leaf_at(s, x, e, i) : -1;
	for (uint32_t v = x->cap - 1; v >= 1; v--)
		t[v] = t[2 * v] > t[2 * v + 1] ? t[2 * v] : t[2 * v + 1];
	e->built = 1;
	e->cursor = x->head;
}

static void refresh(struct xp_sched *s, struct xp_index *x, struct entry *e)
{
	int16_t *t = e->tree;
	if (!e->built || x->head - e->cursor > (uint64_t)x->logmask + 1 ||
	    x->head - e->cursor > s->nnodes) {
		build(s, x, e);
		return;
	}
	if (++x->gen == 0) { /* stamps wrapped: clear them */
		memset(x->stamp, 0, x->cap * sizeof(uint32_t));
		x->gen = 1;
	}
	for (uint64_t i = e->cursor; i < x->head; i++) {
		uint32_t slot = x->log[i & x->logmask];
		if (x->stamp[slot] == x->gen)
			continue;
		x->stamp[slot] = x->gen;
		uint32_t v = x->cap + slot;
		int16_t nv = leaf_at(s, x, e, slot);
		if (t[v] == nv)
			continue;
		t[v] = nv;
		for (v >>= 1; v; v >>= 1) {
			int16_t m = t[2 * v] > t[2 * v + 1] ? t[2 * v] : t[2 * v + 1];
			if (t[v] == m)
				break;
			t[v] = m;
		}
	}
	e->cursor = x->head;
}

static struct entry *lookup(struct xp_sched *s, struct xp_index *x, const struct xp_request *r)
{
	struct xp_request key = *r;
	uint32_t h;
	struct entry *e = NULL;

	key.mem_mib = 0;
	if (key.dev_count == 0) {
		memset(&key.sel, 0, sizeof(key.sel));
		key.sel.cls = -1;
		key.topo = XP_TOPO_ANY;
	}
	h = shape_hash(&key);
	for (size_t i = 0; i < x->nent; i++)
		if (x->ent[i].hash == h && xp_shape_eq(&x->ent[i].shape.req, &key)) {
			e = &x->ent[i];
			break;
		}
	if (!e) {
		if (x->nent < x->maxent) {
			e = &x->ent[x->nent++];
			e->tree = XNEWV(int16_t, 2 * (size_t)x->cap);
			if (x->memo) {
				e->mkey = XNEWV(uint64_t, XP_MEMO * (size_t)x->cap);
				e->mval = XNEWV(int16_t, XP_MEMO * (size_t)x->cap);
			}
		} else { /* evict the least recently used */
			e = &x->ent[0];
			for (size_t i = 1; i < x->nent; i++)
				if (x->ent[i].last_use < e->last_use)
					e = &x->ent[i];
			xp_shape_free(&e->shape);
		}
		xp_shape_init(s, &e->shape, &key);
		e->hash = h;
		e->built = e->memo_ok = 0;
	}
	e->last_use = ++x->clock;
	return e;
}

/* Leftmost slot with the highest score among nodes with mem_free >= mem. */
static long query(const struct xp_index *x, const int16_t *t, int64_t mem, int32_t *score)
{
	uint32_t stack[2 * 32 + 2];
	int sp = 0;
	int32_t best = -1;
	uint32_t best_slot = UINT32_MAX;

	stack[sp++] = 1;
	while (sp) {
		uint32_t v = stack[--sp];
		int32_t tv = t[v];
		if (tv < 0 || tv < best || x->memtree[v] < mem)
			continue;
		if (tv == best) {
			uint32_t lvl = x->depth - (31 - (uint32_t)__builtin_clz(v));
			if ((v << lvl) - x->cap > best_slot)
				continue;
		}
		if (v >= x->cap) {
			uint32_t slot = v - x->cap;
			if (tv > best || slot < best_slot) {
				best = tv;
				best_slot = slot;
			}
			continue;
		}
		if (t[2 * v + 1] > t[2 * v]) {
			stack[sp++] = 2 * v;
			stack[sp++] = 2 * v + 1;
		} else {
			stack[sp++] = 2 * v + 1;
			stack[sp++] = 2 * v;
		}
	}
	*score = best;
	return best < 0 ? -1 : (long)best_slot;
}

/* Uniform choice among slots scoring exactly `score` with enough memory. */
static long sample_ties(const struct xp_index *x, const int16_t *t, int64_t mem, int32_t score,
			struct xp_rng *rng)
{
	uint32_t stack[2 * 32 + 2];
	int sp = 0;
	uint64_t seen = 0;
	long pick = -1;

	stack[sp++] = 1;
	while (sp) {
		uint32_t v = stack[--sp];
		if (t[v] < score || x->memtree[v] < mem)
			continue;
		if (v >= x->cap) {
			if (t[v] == score && xp_rng_below(rng, ++seen) == 0)
				pick = (long)(v - x->cap);
			continue;
		}
		stack[sp++] = 2 * v + 1;
		stack[sp++] = 2 * v;
	}
	return pick;
}

long xp_index_best(struct xp_sched *s, const struct xp_request *r, struct xp_rng *rng,
		   const struct xp_shape **shape)
{
	struct xp_index *x = s->idx;
	struct entry *e = lookup(s, x, r);
	int32_t score;
	long slot;

	refresh(s, x, e);
	*shape = &e->shape;
	slot = query(x, e->tree, (int64_t)r->mem_mib, &score);
	if (slot < 0)
		return -1;
	if (s->opts.tiebreak == XP_TIE_RANDOM && rng)
		slot = sample_ties(x, e->tree, (int64_t)r->mem_mib, score, rng);
	return (long)s->slot_node[slot];
}

static void set_leaf(const struct xp_index *x, int16_t *t, uint32_t slot, int16_t val)
{
	uint32_t v = x->cap + slot;
	t[v] = val;
	for (v >>= 1; v; v >>= 1)
		t[v] = t[2 * v] > t[2 * v + 1] ? t[2 * v] : t[2 * v + 1];
}

/* The k best nodes for r in the order xp_index_best() would take them
 * under the rank tie-break (each query masks the winner; the tree is
 * restored before returning). */
int xp_index_top(struct xp_sched *s, const struct xp_request *r, uint32_t *nodes, int k,
		 const struct xp_shape **shape)
{
	struct xp_index *x = s->idx;
	struct entry *e = lookup(s, x, r);
	uint32_t slots[8];
	int16_t saved[8];
	int32_t score;
	int got = 0;

	refresh(s, x, e);
	*shape = &e->shape;
	if (k > 8)
		k = 8;
	while (got < k) {
		long slot = query(x, e->tree, (int64_t)r->mem_mib, &score);
		if (slot < 0)
			break;
		slots[got] = (uint32_t)slot;
		saved[got] = e->tree[x->cap + slot];
		nodes[got++] = s->slot_node[slot];
		set_leaf(x, e->tree, (uint32_t)slot, -1);
	}
	for (int i = got - 1; i >= 0; i--)
		set_leaf(x, e->tree, slots[i], saved[i]);
	return got;
}
