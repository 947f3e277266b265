/*
 * prices: the price table that turns metered usage into cost (issue 7 §3,
 * docs/design/metering.md). One table for the pool, set by an admin
 * (PUT /v1/prices, journaled as prices.set), YAML or JSON, read by the edge
 * (src/edge/prices.c):
 *
 *   currency: USD               # a label, 1-8 letters (default USD)
 *   cpu: 0.04                   # per core-hour
 *   memory: 0.005               # per GiB-hour
 *   energy: 0.15                # per kWh
 *   devices:                    # per device-hour, by model; "default": others
 *     A100: 2.50
 *     default: 1.00
 *   time_of_day:                # multipliers by UTC hour [from, to); others 1
 *     - {from: 0, to: 7, factor: 0.6}
 *
 * Every price is a decimal 0..1e6; a factor 0..100.
 */
#ifndef XP_PRICES_H
#define XP_PRICES_H

#include <stdint.h>


#include "../../lib/err.h"

#define XP_PRICE_MODELS	   64
#define XP_PRICE_MODEL_LEN 64

struct xp_prices {
	int set; /* 0: no table yet (every cost is 0) */
	char currency[9];
	double cpu, memory, energy, dev_default;
	uint32_t nmodels;
	char model[XP_PRICE_MODELS][XP_PRICE_MODEL_LEN];
	double model_price[XP_PRICE_MODELS];
	double factor[24]; /* by UTC hour */
};

/* The canonical document: src/edge/canon.c (xp_prices_json). */
/* Per device-hour of model (NULL or unlisted: the default). */
double xp_prices_device(const struct xp_prices *p, const char *model);
/* Hours in [a, b) (ms since the epoch), each weighted by its UTC hour's
 * factor. */
double xp_prices_hours(const struct xp_prices *p, int64_t a, int64_t b);

#endif
