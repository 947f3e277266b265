/*
 * retention: finished jobs are kept for a while, then forgotten.
 *
 * A terminal job (succeeded, failed, cancelled) stays in memory, in the API
 * and in every snapshot until the owner journals `job.forget` for it -
 * when it finished longer ago than the retention period, or when more
 * terminal jobs are kept than the cap (the oldest go first). Without this
 * the state, and with it every snapshot, grows with every job ever run.
 *
 * The decision is the owner's (it reads the clock); the record names the
 * ids, so replay forgets exactly what the live controller forgot. A
 * forgotten job's idempotency key is forgotten with it; its id is never
 * given again (next_job_id only grows).
 *
 * Finish order is kept in a FIFO of ids (st->done), derived state: appended
 * by xp_state_finish(), rebuilt from finished_at after a snapshot load;
 * ids already forgotten are skipped when they reach its head.
 */
#include "state_int.h"

#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"

#define FORGET_MAX XP_REC_MAX_FORGET /* ids per record */

void xp_state_note_done(struct xp_state *st, const struct xp_job *j)
{
	xp_vec_push(&st->done, j->id);
}

static int by_finish(const void *a, const void *b)
{
	const struct xp_job *x = *(struct xp_job *const *)a, *y = *(struct xp_job *const *)b;
	if (x->finished_at != y->finished_at)
		return x->finished_at < y->finished_at ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

void xp_state_done_rebuild(struct xp_state *st)
{
	XP_VEC(struct xp_job *) t = { 0 };
	for (size_t i = 0; i < st->jobs.n; i++)
		if (xp_job_terminal(st->jobs.v[i]->state))
			xp_vec_push(&t, st->jobs.v[i]);
	if (t.n)
		qsort(t.v, t.n, sizeof(*t.v), by_finish);
	st->done.n = 0;
	st->done_head = 0;
	for (size_t i = 0; i < t.n; i++)
		xp_vec_push(&st->done, t.v[i]->id);
	xp_vec_free(&t);
}

size_t xp_state_forget_due(struct xp_state *st, int64_t now, int64_t keep_ms, uint64_t max_kept,
			   uint64_t *ids, size_t max)
{
	uint64_t kept = st->count[XP_JOB_SUCCEEDED] + st->count[XP_JOB_FAILED] +
			st->count[XP_JOB_CANCELLED];
	size_t n = 0;
	if (max > FORGET_MAX)
		max = FORGET_MAX;
	/* drop ids forgotten already from the head, compacting now and then */
	while (st->done_head < st->done.n) {
		const struct xp_job *j = xp_state_job(st, st->done.v[st->done_head]);
		if (j && xp_job_terminal(j->state))
			break;
		st->done_head++;
	}
	if (st->done_head > 4096 && st->done_head * 2 > st->done.n) {
		memmove(st->done.v, st->done.v + st->done_head,
			(st->done.n - st->done_head) * sizeof(*st->done.v));
		st->done.n -= st->done_head;
		st->done_head = 0;
	}
	for (size_t k = st->done_head; k < st->done.n && n < max; k++) {
		const struct xp_job *j = xp_state_job(st, st->done.v[k]);
		if (!j || !xp_job_terminal(j->state))
			continue;
		if (kept - n <= max_kept && j->finished_at + keep_ms > now)
			break; /* the FIFO is in finish order: the rest are younger */
		ids[n++] = j->id;
	}
	return n;
}


/* keep the jobs of v not being forgotten */
static void drop_forgotten(struct xp_job **v, size_t *n)
{
	size_t keep = 0;
	for (size_t i = 0; i < *n; i++)
		if (!v[i]->forgetting)
			v[keep++] = v[i];
	*n = keep;
}

int xp_state_job_forget(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
			struct xp_err *err)
{
	const uint64_t *ids = r->u.forget.ids; /* the codec checked 1..FORGET_MAX ids > 0 */
	size_t i, n = r->u.forget.n;
	/* check all before changing any */
	int rc = 0;
	for (i = 0; i < n; i++) {
		long long id = (long long)ids[i];
		struct xp_job *j = xp_state_job(st, ids[i]);
		if (!j)
			rc = xp_errf(err, XP_ENOENT, "no job %lld", (long long)id);
		else if (!xp_job_terminal(j->state))
			rc = xp_errf(err, XP_ESTATE,
				     "job %lld is %s: only finished jobs are forgotten",
				     (long long)id, xp_job_state_name(j->state));
		else if (j->forgetting)
			rc = xp_errf(err, XP_ECORRUPT, "job %lld named twice", (long long)id);
		if (rc < 0)
			break;
		j->forgetting = 1;
	}
	if (rc < 0) {
		for (i = 0; i < n; i++) {
			struct xp_job *j = xp_state_job(st, ids[i]);
			if (j)
				j->forgetting = 0;
		}
		return rc;
	}
	/* out of the map, the key table and the counts; then out of the lists;
	 * then freed */
	struct xp_job **gone = XNEWV(struct xp_job *, n);
	for (i = 0; i < n; i++) {
		struct xp_job *j = xp_intmap_del(&st->job_by_id, ids[i]);
		if (j->key) {
			char buf[512];
			xp_state_key(st, j->tenant, j->key, buf, sizeof(buf));
			xp_sym s = xp_strtab_find(st->keys, buf);
			if (s && s < st->key_job.n && st->key_job.v[s] == j->id)
				st->key_job.v[s] = 0;
		}
		st->count[j->state]--;
		gone[i] = j;
	}
	drop_forgotten(st->jobs.v, &st->jobs.n);
	xp_cycle_abort(st); /* its entries may name these jobs */
	drop_forgotten(st->pending.v, &st->pending.n);
	drop_forgotten(st->fresh.v, &st->fresh.n);
	for (i = 0; i < n; i++)
		xp_state_job_free(gone[i]);
	free(gone);
	ev->type = "jobs.forgotten";
	ev->tenant = -2; /* admins: tenants see their own jobs' terminal events */
	return 0;
}
