/* state_int: internals shared by the files of the state layer. */
#ifndef XP_STATE_INT_H
#define XP_STATE_INT_H

#include <jansson.h>

#include "state.h"

void xp_state_job_free(struct xp_job *j);
void xp_state_key(const struct xp_state *st, uint32_t tenant, const char *key, char *buf,
		  size_t len);
json_t *xp_allocs_json(const struct xp_state *st, const struct xp_alloc *a, uint32_t n);
/* Insert a decoded job (submit or snapshot). */
void xp_state_add_job(struct xp_state *st, struct xp_job *j);
/* Node added from a one-node descriptor JSON; returns its index or < 0. */
long xp_state_add_node(struct xp_state *st, json_t *descriptor, int source, int state,
		       struct xp_err *err);
/* Allocations of a record or snapshot back into a[n]. */
int xp_allocs_parse(struct xp_state *st, json_t *arr, struct xp_alloc *a, uint32_t n,
		    struct xp_err *err);

void xp_state_finish(struct xp_state *st, struct xp_job *j, int to, int64_t at);
/* retention.c: the finish-order FIFO, and the job.forget record */
void xp_state_note_done(struct xp_state *st, const struct xp_job *j);
void xp_state_done_rebuild(struct xp_state *st);
int xp_state_job_forget(struct xp_state *st, json_t *o, struct xp_event_info *ev,
			struct xp_err *err);
/* Replica r of j starts / stops running on node n (count and list). */
void xp_node_run_add(struct xp_state *st, uint32_t n, struct xp_job *j, uint32_t r);
void xp_node_run_del(struct xp_state *st, uint32_t n, const struct xp_job *j, uint32_t r);
void xp_state_set_health(struct xp_state *st, long n, const uint8_t *ok, char *const *why);

#endif
