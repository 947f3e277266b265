/*
 * prices: the price table read from a document tree (edge.h); the writer
 * and the arithmetic stay in the state (src/core/state/prices.c).
 */
#include "edge_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../descriptor/tree.h"
#include "../lib/parse.h"
#include "../lib/timefmt.h"

#define PRICE_MAX  1e6
#define FACTOR_MAX 100.0

static const char *const top_keys[] = { "currency", "cpu",	   "memory", "energy",
					"devices",  "time_of_day", NULL };
static const char *const tod_keys[] = { "from", "to", "factor", NULL };

/* a decimal in [0, max] at key of map (absent: *out untouched) */
static int get_num(struct xp_walk *w, const struct xp_tree *map, const char *key, double max,
		   const char *what, double *out)
{
	const struct xp_tree *v = xp_tree_field(map, key);
	double d;
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(w, key);
	int rc = 0;
	if (v->kind != XP_TREE_SCALAR || xp_parse_double(v->text, &d) < 0 || !(d >= 0) ||
	    d > max)
		rc = xp_walk_fail(w, v->line, XP_EINVAL, "expected %s 0..%g, got %s", what, max,
				  v->kind == XP_TREE_SCALAR ? XP_SHOW(v->text)
							     : xp_tree_kind_name(v));
	else
		*out = d;
	xp_walk_pop(w, m);
	return rc < 0 ? rc : 1;
}

static int parse_devices(struct xp_walk *w, const struct xp_tree *d, struct xp_prices *p)
{
	int rc = xp_walk_want(w, d, XP_TREE_MAP, "a map of model: price");
	if (rc < 0)
		return rc;
	if (d->n > XP_PRICE_MODELS)
		return xp_walk_fail(w, d->line, XP_EINVAL, "at most %d models, got %zu",
				    XP_PRICE_MODELS, d->n);
	for (size_t i = 0; i < d->n; i++) {
		const char *k = d->keys[i];
		size_t kl = strlen(k);
		int ok = kl >= 1 && kl < XP_PRICE_MODEL_LEN;
		for (size_t c = 0; ok && c < kl; c++)
			ok = isgraph((unsigned char)k[c]);
		if (!ok) {
			size_t m = xp_walk_push_key(w, k);
			rc = xp_walk_fail(w, d->key_lines[i], XP_EINVAL,
					  "expected a model name of 1-63 printable characters");
			xp_walk_pop(w, m);
			return rc;
		}
		double v = 0;
		if ((rc = get_num(w, d, k, PRICE_MAX, "a price", &v)) < 0)
			return rc;
		if (!strcmp(k, "default")) {
			p->dev_default = v;
			continue;
		}
		snprintf(p->model[p->nmodels], XP_PRICE_MODEL_LEN, "%s", k);
		p->model_price[p->nmodels++] = v;
	}
	return 0;
}

static int parse_tod(struct xp_walk *w, const struct xp_tree *t, struct xp_prices *p)
{
	int rc = xp_walk_list(w, t, 24);
	for (size_t i = 0; rc >= 0 && i < t->n; i++) {
		const struct xp_tree *e = t->kids[i];
		size_t m = xp_walk_push_idx(w, i);
		int64_t from = 0, to = 0;
		double f = 1;
		rc = xp_walk_want(w, e, XP_TREE_MAP, "a map {from, to, factor}");
		if (rc == 0)
			rc = xp_walk_keys(w, e, tod_keys);
		if (rc == 0 && (rc = xp_walk_get_int(w, e, "from", 0, 23, &from)) == 0)
			rc = xp_walk_fail(w, e->line, XP_EINVAL, "from: missing (an hour 0..23)");
		if (rc > 0 && (rc = xp_walk_get_int(w, e, "to", 1, 24, &to)) == 0)
			rc = xp_walk_fail(w, e->line, XP_EINVAL, "to: missing (an hour 1..24)");
		if (rc > 0 && (rc = get_num(w, e, "factor", FACTOR_MAX, "a factor", &f)) == 0)
			rc = xp_walk_fail(w, e->line, XP_EINVAL, "factor: missing");
		if (rc > 0 && to <= from)
			rc = xp_walk_fail(w, e->line, XP_EINVAL,
					  "to (%lld) must be after from (%lld)", (long long)to,
					  (long long)from);
		if (rc > 0) {
			rc = 0;
			for (int64_t h = from; h < to; h++)
				p->factor[h] = f;
		}
		xp_walk_pop(w, m);
	}
	return rc < 0 ? rc : 0;
}

int xp_prices_parse(const char *name, const char *text, size_t len, int json,
		    struct xp_prices *out, struct xp_err *err)
{
	struct xp_tree *t = NULL;
	struct xp_walk w = { .name = name, .err = err };
	struct xp_prices p;
	const struct xp_tree *v;
	const char *cur = "USD";
	int rc = xp_tree_parse(name, text, len, json, &t, err);

	memset(&p, 0, sizeof(p));
	for (int h = 0; h < 24; h++)
		p.factor[h] = 1;
	if (rc < 0)
		return rc;
	if (!t)
		rc = xp_walk_fail(&w, 0, XP_EINVAL, "empty document, expected a price table");
	if (rc == 0)
		rc = xp_walk_want(&w, t, XP_TREE_MAP, "a map (a price table)");
	if (rc == 0)
		rc = xp_walk_keys(&w, t, top_keys);
	if (rc == 0 && (rc = xp_walk_get_str(&w, t, "currency", 8, &cur)) > 0) {
		for (const char *c = cur; rc > 0 && *c; c++)
			if (!isalpha((unsigned char)*c))
				rc = -1;
		if (rc < 0 || !*cur) {
			size_t m = xp_walk_push_key(&w, "currency");
			rc = xp_walk_fail(&w, xp_tree_get(t, "currency")->line, XP_EINVAL,
					  "expected 1-8 letters such as USD, got '%s'", XP_SHOW(cur));
			xp_walk_pop(&w, m);
		}
	}
	if (rc >= 0)
		rc = get_num(&w, t, "cpu", PRICE_MAX, "a price", &p.cpu);
	if (rc >= 0)
		rc = get_num(&w, t, "memory", PRICE_MAX, "a price", &p.memory);
	if (rc >= 0)
		rc = get_num(&w, t, "energy", PRICE_MAX, "a price", &p.energy);
	if (rc >= 0 && (v = xp_tree_field(t, "devices"))) {
		size_t m = xp_walk_push_key(&w, "devices");
		rc = parse_devices(&w, v, &p);
		xp_walk_pop(&w, m);
	}
	if (rc >= 0 && (v = xp_tree_field(t, "time_of_day"))) {
		size_t m = xp_walk_push_key(&w, "time_of_day");
		rc = parse_tod(&w, v, &p);
		xp_walk_pop(&w, m);
	}
	if (rc >= 0) {
		rc = 0;
		snprintf(p.currency, sizeof(p.currency), "%s", cur);
		p.set = 1;
		*out = p;
	}
	xp_tree_destroy(t);
	return rc;
}
