/*
 * svcspec: service definitions and a replica's service, in and out (see
 * svcspec.h).
 */
#include "svcspec.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/parse.h"
#include "../../lib/timefmt.h"
#include "../../lib/xalloc.h"

static const char *const metric_names[XP_METRIC_N] = { "rps", "inflight", "latency_p99" };

const char *xp_metric_name(int m)
{
	return m >= 0 && m < XP_METRIC_N ? metric_names[m] : "?";
}

void xp_servicespec_free(struct xp_servicespec *s)
{
	xp_jobspec_free(&s->tmpl);
}

void xp_svcref_free(struct xp_svcref *r)
{
	free(r->name);
	free(r->chk);
	r->name = NULL;
	r->chk = NULL;
}
