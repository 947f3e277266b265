/*
 * mig_mode: the controller's orders to change a GPU's MIG mode (issue 21,
 * docs/design/mig.md "MIG mode changes"). The assignments reply carries
 * "mig_mode": [{device, mode: "mig" | "off", job}] while the controller
 * holds a reservation for that GPU - made only on a node whose admin
 * allowed MIG mode changes, for a GPU with nothing of xpool's in use on
 * it. Before MIG off, the agent destroys the instances it created
 * (WORK/mig-owned) that no task holds; an instance it did not create (an
 * administrator's) or one a task holds refuses the order: it is never
 * destroyed. The agent tries
 * each order once: it refuses unless it was started with
 * --mig-mode-change (its own opt-in, a second key beside the admin's),
 * else asks NVML (xp_hal_mig_set_mode: nvmlDeviceSetMigMode, which
 * refuses with IN_USE while processes run, or leaves the change pending a
 * reset, reported as a failure). It then reports the result (POST
 * /v1/nodes/NAME/mig-mode {device, mode, ok, why}) until the controller
 * has it; an order that leaves the list is forgotten, so a later one is
 * tried afresh. Main thread only; a->mu guards mig_devs.
 */
#include "agent.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "../client/client.h"
#include "../hal/hal.h"

/* MIG off: xpool's idle instances on dev destroyed; 0, or the refusal
 * when instances remain (an administrator's, or one a task holds) */
static int clear_instances(struct xp_agent *a, unsigned dev, struct xp_err *err)
{
	struct xp_hal_mig list;
	xp_mig_free_overlap(a, dev, 0, 8); /* all 8 memory slices: xpool's, held by no task */
	int rc = xp_hal_mig_list(a->hal, dev, &list, err);
	if (rc < 0)
		return rc;
	if (!list.n)
		return 0;
	return xp_errf(err, XP_ESTATE,
		       "GPU %u holds %u MIG instance(s) xpool may not destroy (GI %u%s): MIG "
		       "mode stays on",
		       dev, list.n, list.inst[0].gi_id,
		       xp_mig_owned(a, dev, list.inst[0].gi_id) ? ", held by a task"
								: ", not created by xpool");
}

static void try_order(struct xp_agent *a, unsigned dev)
{
	struct xp_err err = { 0 };
	int rc, on = a->mig_mode[dev].on;
	if (!a->o.mig_mode_change)
		rc = xp_errf(&err, XP_EPERM,
			     "the agent of node %s was not started with --mig-mode-change: it "
			     "changes no MIG mode",
			     a->node);
	else if (!a->hal)
		rc = xp_errf(&err, XP_EUNSUPP, "this agent has no device layer");
	else if (!on && (rc = clear_instances(a, dev, &err)) < 0)
		;
	else
		rc = xp_hal_mig_set_mode(a->hal, dev, on, &err);
	a->mig_mode[dev].tried = 1;
	a->mig_mode[dev].ok = rc == 0;
	snprintf(a->mig_mode[dev].why, sizeof(a->mig_mode[dev].why), "%.255s", rc ? err.text : "");
	fprintf(stderr, "xpool agent: node=%s: MIG mode %s for device %u: %s%s\n", a->node,
		on ? "on" : "off", dev, rc ? "refused: " : "done", rc ? err.text : "");
	if (rc == 0) {
		pthread_mutex_lock(&a->mu);
		if (on)
			a->mig_devs |= 1ull << dev; /* its instances are listed and reconciled */
		else
			a->mig_devs &= ~(1ull << dev); /* a whole GPU again: no instances */
		pthread_mutex_unlock(&a->mu);
	}
}

static void report(struct xp_agent *a, struct xp_client *cl, unsigned dev)
{
	struct xp_err err = { 0 };
	char path[400];
	json_t *reply = NULL, *body = json_pack("{s:i,s:s,s:b,s:s}", "device", (int)dev, "mode",
						a->mig_mode[dev].on ? "mig" : "off", "ok",
						a->mig_mode[dev].ok, "why", a->mig_mode[dev].why);
	snprintf(path, sizeof(path), "/v1/nodes/%s/mig-mode", a->node);
	int rc = xp_client_json(cl, "POST", path, body, &reply, &err);
	json_decref(body);
	json_decref(reply);
	/* taken, or refused for good (the reservation is gone): either way, done */
	if (rc >= 0 || rc == XP_ESTATE || rc == XP_EINVAL)
		a->mig_mode[dev].posted = 1;
	else
		fprintf(stderr, "xpool agent: node=%s: reporting the MIG mode of device %u: %s\n",
			a->node, dev, err.text);
}

void xp_mig_mode_orders(struct xp_agent *a, struct xp_client *cl, json_t *orders)
{
	uint64_t seen = 0;
	size_t i;
	json_t *o;
	json_array_foreach(orders, i, o)
	{
		json_t *d = json_object_get(o, "device"), *m = json_object_get(o, "mode");
		if (!json_is_integer(d) || json_integer_value(d) < 0 ||
		    json_integer_value(d) >= (json_int_t)a->ndevs ||
		    json_integer_value(d) >= XP_AGENT_MIG_MODE || !json_is_string(m) ||
		    (strcmp(json_string_value(m), "mig") && strcmp(json_string_value(m), "off")))
			continue;
		unsigned dev = (unsigned)json_integer_value(d);
		int on = !strcmp(json_string_value(m), "mig");
		seen |= 1ull << dev;
		if (a->mig_mode[dev].tried && a->mig_mode[dev].on != on)
			memset(&a->mig_mode[dev], 0, sizeof(a->mig_mode[dev])); /* a new order */
		a->mig_mode[dev].on = (uint8_t)on;
		if (!a->mig_mode[dev].tried)
			try_order(a, dev);
		if (!a->mig_mode[dev].posted)
			report(a, cl, dev);
	}
	for (unsigned dev = 0; dev < XP_AGENT_MIG_MODE; dev++)
		if (!(seen >> dev & 1))
			memset(&a->mig_mode[dev], 0, sizeof(a->mig_mode[dev]));
}
