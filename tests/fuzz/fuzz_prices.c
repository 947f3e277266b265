/*
 * fuzz_prices: price tables (PUT /v1/prices, src/core/state/prices.h)
 * read by xp_prices_parse as JSON, YAML or by content.
 *
 * Checks: an accepted table holds prices in 0..1e6 and factors in 0..100,
 * and its canonical document (xp_prices_json, what the journal keeps)
 * parses back to the same document; a refusal carries its code and a text
 * naming the document.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/prices.h"
#include "edge/edge.h"
#include "fuzz.h"

static int price_ok(double v, double max)
{
	return isfinite(v) && v >= 0 && v <= max;
}

static void check_ranges(const struct xp_prices *p)
{
	FZ_CHECK(p->set && p->currency[0], "accepted without a currency");
	FZ_CHECK(price_ok(p->cpu, 1e6) && price_ok(p->memory, 1e6) && price_ok(p->energy, 1e6) &&
			 price_ok(p->dev_default, 1e6),
		 "a price out of 0..1e6");
	FZ_CHECK(p->nmodels <= XP_PRICE_MODELS, "%u models", p->nmodels);
	for (uint32_t i = 0; i < p->nmodels; i++)
		FZ_CHECK(price_ok(p->model_price[i], 1e6) && p->model[i][0] &&
				 strcmp(p->model[i], "default"),
			 "model %u '%s'", i, p->model[i]);
	for (int h = 0; h < 24; h++)
		FZ_CHECK(price_ok(p->factor[h], 100), "factor of hour %d: %g", h, p->factor[h]);
}

static char *canonical(const struct xp_prices *p)
{
	json_t *j = xp_prices_json(p);
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xp_prices p, again;
	struct xp_err err = { 0 };
	int json;

	fz_mode(&data, &size, &json, NULL);
	int rc = xp_prices_parse("input", (const char *)data, size, json, &p, &err);
	if (rc < 0) {
		fz_check_refused(rc, &err, "input");
		return 0;
	}
	check_ranges(&p);
	char *j1 = canonical(&p);
	rc = xp_prices_parse("canonical", j1, strlen(j1), 1, &again, &err);
	FZ_CHECK(rc == 0, "canonical document refused: %s\n%s", err.text, j1);
	char *j2 = canonical(&again);
	FZ_CHECK(!strcmp(j1, j2), "canonical document changed on a round trip:\n%s\n%s", j1, j2);
	free(j1);
	free(j2);
	return 0;
}
