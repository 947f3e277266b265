/*
 * deps: jobs that wait for others (depends_on) - docs/design/tenancy.md,
 * "Workflows".
 *
 * A pending job with dependencies not yet met is held: the cycle does not
 * try it. Each job keeps the count of its dependencies still running or
 * pending (unmet); each job with dependents lists their ids
 * (st->dependents, by the id depended on). When a job ends, each pending
 * dependent either counts one dependency met (and joins the cycle at
 * zero) or, when the end can never satisfy it (after-ok and it failed or
 * was cancelled; after-not-ok and it succeeded), is marked doomed: the
 * next cycle journals its cancellation with the reason, as a record, so
 * the journal says why and its own dependents follow in turn.
 */
#include "state_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"

struct depv {
	XP_VEC(uint64_t) ids;
};

/* does a job that ended in state `end` satisfy (1), never satisfy (-1) */
static int verdict(int type, int end)
{
	switch (type) {
	case XP_DEP_AFTER_OK:
		return end == XP_JOB_SUCCEEDED ? 1 : -1;
	case XP_DEP_AFTER_NOT_OK:
		return end == XP_JOB_SUCCEEDED ? -1 : 1;
	default:
		return 1;
	}
}

int xp_deps_check_one(const struct xp_state *st, const struct xp_dep *dep, uint32_t tenant,
		      struct xp_err *err)
{
	const struct xp_job *d = xp_state_job(st, dep->job);
	if (!d || d->tenant != tenant)
		return xp_errf(err, XP_ENOENT, "no job %llu", (unsigned long long)dep->job);
	if (xp_job_terminal(d->state) && verdict(dep->type, d->state) < 0)
		return xp_errf(err, XP_ESTATE, "job %llu ended %s, so %s can never be met",
			       (unsigned long long)d->id, xp_job_state_name(d->state),
			       xp_dep_type_name(dep->type));
	return 0;
}

int xp_deps_check(const struct xp_state *st, const struct xp_jobspec *s, uint32_t tenant,
		  struct xp_err *err)
{
	for (uint16_t i = 0; i < s->ndeps; i++)
		if (xp_deps_check_one(st, &s->deps[i], tenant, err) < 0) {
			xp_err_prefix(err, "depends_on[%u]: ", i);
			return err ? err->code : XP_EINVAL;
		}
	return 0;
}

void xp_deps_add(struct xp_state *st, struct xp_job *j)
{
	j->unmet = 0;
	if (j->state != XP_JOB_PENDING)
		return;
	for (uint16_t i = 0; i < j->spec.ndeps; i++) {
		const struct xp_job *d = xp_state_job(st, j->spec.deps[i].job);
		if (!d) /* forgotten: it ended long ago, and this job was judged then */
			continue;
		if (xp_job_terminal(d->state)) {
			if (verdict(j->spec.deps[i].type, d->state) < 0 && !j->doomed) {
				j->doomed = 1; /* a snapshot taken before its cancellation */
				xp_vec_push(&st->doomed, j->id);
			}
			continue;
		}
		j->unmet++;
		struct depv *v = xp_intmap_get(&st->dependents, d->id);
		if (!v) {
			v = XNEW(struct depv);
			xp_intmap_put(&st->dependents, d->id, v);
		}
		xp_vec_push(&v->ids, j->id);
	}
}

void xp_deps_ended(struct xp_state *st, const struct xp_job *x)
{
	struct depv *v = xp_intmap_del(&st->dependents, x->id);
	if (!v)
		return;
	for (size_t i = 0; i < v->ids.n; i++) {
		struct xp_job *j = xp_state_job(st, v->ids.v[i]);
		if (!j || j->state != XP_JOB_PENDING)
			continue;
		int type = XP_DEP_AFTER_ANY;
		for (uint16_t k = 0; k < j->spec.ndeps; k++)
			if (j->spec.deps[k].job == x->id)
				type = j->spec.deps[k].type;
		j->unmet--;
		if (verdict(type, x->state) < 0) {
			if (!j->doomed) {
				j->doomed = 1;
				xp_vec_push(&st->doomed, j->id);
			}
		} else if (j->unmet == 0 && !j->doomed) { /* it joins the cycle */
			xp_vec_push(&st->pending, j);
			xp_vec_push(&st->fresh, j);
		}
	}
	xp_vec_free(&v->ids);
	free(v);
}

void xp_deps_free(struct xp_state *st)
{
	for (size_t i = 0; i < st->dependents.cap; i++)
		if (st->dependents.keys[i]) {
			struct depv *v = st->dependents.vals[i];
			xp_vec_free(&v->ids);
			free(v);
		}
	xp_intmap_free(&st->dependents);
	xp_vec_free(&st->doomed);
}

long xp_deps_cancel_doomed(struct xp_state *st, xp_emit_fn emit, void *ctx)
{
	long n = 0;
	while (st->doomed.n) {
		uint64_t id = st->doomed.v[--st->doomed.n];
		const struct xp_job *j = xp_state_job(st, id);
		if (!j || j->state != XP_JOB_PENDING)
			continue;
		char why[200] = "a dependency can never be met";
		for (uint16_t k = 0; k < j->spec.ndeps; k++) {
			const struct xp_job *d = xp_state_job(st, j->spec.deps[k].job);
			if (d && xp_job_terminal(d->state) &&
			    verdict(j->spec.deps[k].type, d->state) < 0)
				snprintf(why, sizeof(why), "dependency: job %llu ended %s (%s)",
					 (unsigned long long)d->id, xp_job_state_name(d->state),
					 xp_dep_type_name(j->spec.deps[k].type));
		}
		struct xp_rec rec = { .type = XP_REC_JOB_CANCEL,
				      .u.end = { .id = id, .state = XP_JOB_CANCELLED, .reason = why } };
		int rc = emit(ctx, &rec);
		if (rc < 0)
			return rc;
		n++;
	}
	return n;
}

size_t xp_deps_waiting(const struct xp_state *st, const struct xp_job *j, uint64_t *ids, size_t max)
{
	size_t n = 0;
	for (uint16_t k = 0; k < j->spec.ndeps && n < max; k++) {
		const struct xp_job *d = xp_state_job(st, j->spec.deps[k].job);
		if (d && !xp_job_terminal(d->state))
			ids[n++] = d->id;
	}
	return n;
}

int xp_deps_check_state(const struct xp_state *st, struct xp_err *err)
{
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (j->state != XP_JOB_PENDING)
			continue;
		uint64_t ids[XP_JOB_MAX_DEPS];
		size_t n = xp_deps_waiting(st, j, ids, XP_JOB_MAX_DEPS);
		if (n != j->unmet)
			return xp_errf(err, XP_EINTERNAL,
				       "job %llu: %u dependencies unmet, %zu running",
				       (unsigned long long)j->id, j->unmet, n);
	}
	return 0;
}
