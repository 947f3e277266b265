/*
 * svcspec: a service's definition (docs/api.md "Services") and what each of
 * its replica jobs carries of it, as plain C, read by the edge
 * (src/edge/svcspec.c: API input or a journal record alike) with every
 * field checked, and written back as canonical JSON that parses to the
 * same definition (src/edge/canon.c).
 *
 *   {kind: service, name, tenant, queue, replicas: N | {min, max},
 *    port, readiness: {http: PATH | tcp: true, period, timeout},
 *    drain, update: {max_surge, max_unavailable},
 *    autoscale: {metric: rps|inflight|latency_p99, target, path,
 *    series, period, up_window, down_window, tolerance, predict},
 *    template: JOB SPEC}
 *
 * A service keeps its replicas running: each is a job of one replica made
 * from the template, with a port its agent picks (XPOOL_PORT) and the
 * readiness check its agent runs. replicas is the count wanted at creation
 * (a number: min = max = it; a range: it starts at min). port is the
 * proxy's (the service's address for clients), 0: none. drain is how long
 * a replica leaving (scale-down) stays out of the endpoints before it is
 * stopped, so a proxy stops sending it requests first.
 *
 * autoscale makes the controller set the replica count itself, between
 * min and max, by Kubernetes' HPA rule on the metric's per-replica average
 * (docs/design/serving.md); the agents read each replica's value from the
 * Prometheus text it serves at path (default /metrics), the series named
 * (defaults: rps the counter requests_total, inflight the gauge
 * inflight_requests, latency_p99 the gauge latency_p99_seconds).
 *
 * A replica job's spec holds {service: {name, version, readiness, load}}:
 * set by the controller only (xp_jobspec_check_submit refuses it from
 * users).
 */
#ifndef XP_SVCSPEC_H
#define XP_SVCSPEC_H

#include <stdint.h>


#include "../../lib/err.h"
#include "spec.h"

#define XP_SERVICE_MAX_REPLICAS 1024

/* autoscale: the HPA rule (hpa.h) on one load signal per replica */
enum xp_autoscale_metric {
	XP_METRIC_RPS,	    /* requests per second: the rate of a counter */
	XP_METRIC_INFLIGHT, /* requests in flight: a gauge */
	XP_METRIC_LATENCY,  /* latency p99 in seconds: a gauge */
	XP_METRIC_N
};

struct xp_autoscale {
	uint8_t on;
	uint8_t metric;	       /* enum xp_autoscale_metric */
	double target;	       /* per replica, > 0 */
	struct xp_scrape load; /* where the agent reads it (series defaults by metric) */
	int64_t period_ms;     /* how often the rule runs; default 15 s (k8s' sync period) */
	int64_t up_window_ms, down_window_ms; /* defaults 0 s and 300 s */
	double tolerance;		      /* default 0.1 */
	int64_t predict_ms; /* > 0: the rule also takes a forecast this far ahead */
};

const char *xp_metric_name(int m);

struct xp_servicespec {
	char name[XP_NAME_MAX + 1];
	char tenant[XP_NAME_MAX + 1]; /* "": the creator's */
	char queue[XP_NAME_MAX + 1];  /* "": default */
	uint32_t min, max, replicas;  /* replicas: wanted at creation, min..max */
	uint16_t port;		      /* the proxy's port; 0: none */
	struct xp_probe ready;
	int64_t drain_ms; /* default 2000 */
	uint32_t max_surge, max_unavailable; /* a rolling update's bounds: replicas above
						the count, ready replicas below it;
						defaults 1 and 0, not both 0 */
	struct xp_autoscale scale;
	struct xp_jobspec tmpl;
};

void xp_servicespec_free(struct xp_servicespec *s);
/* Its canonical JSON and the new-version test are the edge's
 * (src/edge/canon.c); the state calls the test through its docs table. */
void xp_svcref_free(struct xp_svcref *r);

#endif
