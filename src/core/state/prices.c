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

json_t *xp_prices_json(const struct xp_prices *p)
{
	json_t *o = json_object(), *d = json_object(), *tod = json_array();
	json_object_set_new(o, "currency", json_string(p->currency));
	json_object_set_new(o, "cpu", json_real(p->cpu));
	json_object_set_new(o, "memory", json_real(p->memory));
	json_object_set_new(o, "energy", json_real(p->energy));
	for (uint32_t i = 0; i < p->nmodels; i++)
		json_object_set_new(d, p->model[i], json_real(p->model_price[i]));
	json_object_set_new(d, "default", json_real(p->dev_default));
	json_object_set_new(o, "devices", d);
	for (int h = 0; h < 24;) { /* runs of equal factors other than 1 */
		int e = h + 1;
		while (e < 24 && p->factor[e] == p->factor[h])
			e++;
		if (p->factor[h] != 1)
			json_array_append_new(tod, json_pack("{s:i,s:i,s:f}", "from", h, "to", e,
							     "factor", p->factor[h]));
		h = e;
	}
	json_object_set_new(o, "time_of_day", tod);
	return o;
}

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
