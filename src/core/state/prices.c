/*
 * prices: the price table (see prices.h).
 */
#include "prices.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../lib/timefmt.h"
#include "../../lib/parse.h"

#define DAY_MS	   (24 * XP_HOUR_MS)

double xp_prices_device(const struct xp_prices *p, const char *model)
{
	for (uint32_t i = 0; model && i < p->nmodels; i++)
		if (!strcmp(p->model[i], model))
			return p->model_price[i];
	return p->dev_default;
}

double xp_prices_hours(const struct xp_prices *p, int64_t a, int64_t b)
{
	double day = 0, sum = 0;
	if (b <= a)
		return 0;
	for (int h = 0; h < 24; h++)
		day += p->factor[h];
	/* whole days at once, then hour by hour */
	int64_t days = (b - a) / DAY_MS;
	sum += (double)days * day;
	a += days * DAY_MS;
	while (a < b) {
		int64_t start = a - ((a % XP_HOUR_MS) + XP_HOUR_MS) % XP_HOUR_MS;
		int64_t end = start + XP_HOUR_MS < b ? start + XP_HOUR_MS : b;
		int h = (int)((((start / XP_HOUR_MS) % 24) + 24) % 24);
		sum += p->factor[h] * (double)(end - a) / XP_HOUR_MS;
		a = end;
	}
	return sum;
}
