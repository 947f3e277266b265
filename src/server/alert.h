/*
 * alert: the noise filter between the controller's raw signals and the
 * people paged (issue 7 §5, docs/design/alerts.md).
 *
 * A signal says that a rule fires (or stops firing) for a subject - a
 * device, a node, a queue, a job - in a group (the node's zone, the queue
 * tree, the tenant). The engine turns thousands of signals into a handful
 * of notifications:
 *
 *   de-duplication  a signal that repeats the subject's state is dropped;
 *   flap damping    a subject that changes state flap_changes times within
 *                   flap_window is reported once as flapping and then left
 *                   alone until it has been quiet for flap_window;
 *   grouping        changes of one (rule, group) wait group_wait for
 *                   company and go out as one notification listing every
 *                   subject; later changes of the group go out at most
 *                   every group_interval;
 *   cooldown        a group still firing and unchanged is repeated only
 *                   after repeat.
 *
 * No fault is dropped: every subject that fired appears in a notification,
 * as firing, flapping, or "transient" (fired and resolved between two
 * notifications of its group).
 *
 * Pure: no I/O, no clock (times arrive as arguments), no threads. The owner
 * thread of the server feeds it (alert_feed.c) and hands the notifications
 * to the webhook sender.
 */
#ifndef XP_ALERT_H
#define XP_ALERT_H

#include <stdint.h>

#include <jansson.h>

enum xp_alert_rule {
	XP_AL_DEVICE_UNHEALTHY,
	XP_AL_NODE_LOST,
	XP_AL_QUEUE_STARVED,
	XP_AL_QUOTA_EXHAUSTED,
	XP_AL_JOB_FAILING,
	XP_AL_GPU_OOM,
	XP_AL_N
};

struct xp_alert_opts {
	int64_t group_wait_ms;	   /* default 30 s */
	int64_t group_interval_ms; /* default 5 min */
	int64_t repeat_ms;	   /* default 4 h */
	int64_t flap_window_ms;	   /* default 10 min */
	uint32_t flap_changes;	   /* default 4 */
};

struct xp_alert_stats {
	uint64_t signals;	/* every signal given */
	uint64_t duplicates;	/* dropped: the subject was already in that state */
	uint64_t flap_absorbed; /* changes of flapping subjects not reported one by one */
	uint64_t notifications;
	uint64_t faults; /* subjects that started firing (flapping counts once) */
};

struct xp_alerts;

const char *xp_alert_rule_name(int rule);
int xp_alert_rule_parse(const char *s);

/* o may be NULL (the defaults); zero fields take their defaults. */
struct xp_alerts *xp_alerts_new(const struct xp_alert_opts *o);
void xp_alerts_free(struct xp_alerts *a);

void xp_alerts_signal(struct xp_alerts *a, int64_t now, int rule, const char *subject,
		      const char *group, int firing, const char *detail);

/* The notifications due at now, each a JSON object (a new reference the
 * callback must release):
 *   {"status": "firing"|"resolved", "rule", "group", "at",
 *    "firing": [{"subject", "since", "detail"}], "flapping": [...],
 *    "resolved": [...], "transient": [...], "repeat": bool} */
typedef void (*xp_alert_send_fn)(void *ctx, json_t *notification);
void xp_alerts_tick(struct xp_alerts *a, int64_t now, xp_alert_send_fn send, void *ctx);

/* The groups with something firing or flapping, for GET /v1/alerts. */
json_t *xp_alerts_active(const struct xp_alerts *a);
void xp_alerts_get_stats(const struct xp_alerts *a, struct xp_alert_stats *out);

#endif
