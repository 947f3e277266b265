/*
 * serving_train: the training backlog of `xpool sim serving` (serving.h):
 * the seeded jobs, their start (rigid first-fit, or elastic), growth,
 * shrinking and preemption, and their progress with checkpoints.
 *
 * Notes: a job pauses restart_s at every start and resize (containers up,
 * rendezvous, checkpoint loaded); a shrink also waits for the leaving
 * replicas' grace_s. Preempted jobs go back to the queue's head, so the
 * work they hold is the next to resume.
 */
#include <math.h>
#include <string.h>

#include "serving_int.h"

#define MIN_JOB_H 0.25
#define MAX_JOB_H 12.0

static void job_draw(struct xp_rng *g, const struct xp_serve_opts *o, double at, struct sv_job *j)
{
	static const uint32_t sizes[] = { 1, 2, 4, 8 };
	static const double cum[] = { 0.30, 0.50, 0.75, 1.0 };
	double u = xp_rng_double(g);
	int k = 0;
	while (k < 3 && u >= cum[k])
		k++;
	double h = -o->job_hours * log(1 - xp_rng_double(g));
	h = h < MIN_JOB_H ? MIN_JOB_H : h > MAX_JOB_H ? MAX_JOB_H : h;
	memset(j, 0, sizeof(*j));
	j->arrive = at;
	j->n = j->max = sizes[k] < o->gpus ? sizes[k] : o->gpus;
	j->min = j->n / 4 ? j->n / 4 : 1;
	j->work = (double)j->n * h * 3600;
	j->state = SV_FUTURE;
}

/* the expected GPU-seconds of one job (sizes' mean x the clipped mean) */
static double job_mean_work(const struct xp_serve_opts *o)
{
	double m = o->job_hours, a = MIN_JOB_H, b = MAX_JOB_H;
	/* E[min(max(X, a), b)] for X exponential with mean m */
	double clipped = a + m * (exp(-a / m) - exp(-b / m));
	return 3.7 * clipped * 3600;
}

void sv_jobs_make(struct sv *s, double horizon)
{
	const struct xp_serve_opts *o = s->o;
	struct xp_rng g;
	XP_VEC(struct sv_job) v = { 0 };
	struct sv_job j;
	xp_rng_seed(&g, o->seed);
	/* one pool-hour queued at the start */
	for (double w = 0; w < (double)o->gpus * 3600; w += j.work) {
		job_draw(&g, o, 0, &j);
		xp_vec_push(&v, j);
	}
	double rate = o->train_load * o->gpus * horizon / job_mean_work(o) / horizon;
	for (double t = 0; rate > 0;) {
		t += -log(1 - xp_rng_double(&g)) / rate;
		if (t >= horizon)
			break;
		job_draw(&g, o, t, &j);
		xp_vec_push(&v, j);
	}
	s->jobs = v.v;
	s->njobs = v.n;
	s->r->jobs = (uint32_t)v.n;
}

void sv_train_arrivals(struct sv *s)
{
	while (s->arrived < s->njobs && s->jobs[s->arrived].arrive <= s->t) {
		s->jobs[s->arrived].state = SV_QUEUED;
		xp_vec_push(&s->queue, (uint32_t)s->arrived);
		s->arrived++;
	}
}

uint32_t sv_train_held(const struct sv *s)
{
	uint32_t n = 0;
	for (size_t i = 0; i < s->arrived; i++)
		if (s->jobs[i].state == SV_RUN)
			n += s->jobs[i].size;
	return n;
}

static void start(struct sv *s, struct sv_job *j, uint32_t size)
{
	j->state = SV_RUN;
	j->size = size;
	j->started = j->last_resize = s->t;
	j->pause_until = s->t + (double)s->o->restart_s;
	j->since_ckpt = 0;
	s->free -= size;
}

/* first-fit from the queue: rigid at n, elastic at up to max (>= min) */
static void start_queued(struct sv *s)
{
	size_t keep = 0;
	for (size_t q = 0; q < s->queue.n; q++) {
		struct sv_job *j = &s->jobs[s->queue.v[q]];
		uint32_t need = s->elastic ? j->min : j->n;
		if (need <= s->free)
			start(s, j, s->elastic ? (j->max < s->free ? j->max : s->free) : j->n);
		else
			s->queue.v[keep++] = s->queue.v[q];
	}
	s->queue.n = keep;
}

static void grow(struct sv *s)
{
	for (size_t i = 0; i < s->arrived && s->free; i++) {
		struct sv_job *j = &s->jobs[i];
		if (j->state != SV_RUN || j->size >= j->max ||
		    s->t - j->last_resize < (double)s->o->regrow_s)
			continue;
		uint32_t k = j->max - j->size < s->free ? j->max - j->size : s->free;
		j->saved = j->done; /* checkpoint, then restart wider */
		j->size += k;
		s->free -= k;
		j->last_resize = s->t;
		j->pause_until = s->t + (double)s->o->restart_s;
		s->r->grows++;
	}
}

void sv_train_place(struct sv *s)
{
	if (s->waiting)
		return; /* the service first */
	start_queued(s);
	if (s->elastic)
		grow(s);
}

static void drain(struct sv *s, uint32_t n)
{
	struct sv_drain d = { s->t + (double)s->o->grace_s, n };
	xp_vec_push(&s->drain, d);
	s->draining += n;
}

/* the whole job off the pool and back to the queue's head */
static void preempt(struct sv *s, size_t i)
{
	struct sv_job *j = &s->jobs[i];
	if (s->elastic)
		j->saved = j->done; /* checkpoint signal first */
	s->r->lost_gpu_h += (j->done - j->saved) / 3600;
	j->done = j->saved;
	drain(s, j->size);
	j->size = 0;
	j->state = SV_QUEUED;
	xp_vec_reserve(&s->queue, s->queue.n + 1);
	memmove(s->queue.v + 1, s->queue.v, s->queue.n * sizeof(*s->queue.v));
	s->queue.v[0] = (uint32_t)i;
	s->queue.n++;
	s->r->preemptions++;
}

/* the running job started last (reactive's victim), or -1 */
static long youngest(const struct sv *s)
{
	long best = -1;
	for (size_t i = 0; i < s->arrived; i++)
		if (s->jobs[i].state == SV_RUN &&
		    (best < 0 || s->jobs[i].started >= s->jobs[best].started))
			best = (long)i;
	return best;
}

/* the running job with the most GPUs above its min, or -1 */
static long widest(const struct sv *s)
{
	long best = -1;
	uint32_t most = 0;
	for (size_t i = 0; i < s->arrived; i++) {
		const struct sv_job *j = &s->jobs[i];
		if (j->state == SV_RUN && j->size - j->min > most) {
			most = j->size - j->min;
			best = (long)i;
		}
	}
	return best;
}

uint32_t sv_train_reclaim(struct sv *s, uint32_t need)
{
	uint32_t got = 0;
	long i;
	while (s->elastic && got < need && (i = widest(s)) >= 0) {
		struct sv_job *j = &s->jobs[i];
		uint32_t k = j->size - j->min < need - got ? j->size - j->min : need - got;
		j->saved = j->done;
		j->size -= k;
		j->last_resize = s->t;
		j->pause_until = s->t + (double)(s->o->grace_s + s->o->restart_s);
		drain(s, k);
		got += k;
		s->r->shrinks++;
	}
	while (got < need && (i = youngest(s)) >= 0) {
		got += s->jobs[i].size;
		preempt(s, (size_t)i);
	}
	return got;
}

void sv_train_progress(struct sv *s)
{
	for (size_t i = 0; i < s->arrived; i++) {
		struct sv_job *j = &s->jobs[i];
		if (j->state != SV_RUN)
			continue;
		if (j->size < j->min || j->size > j->max || (!s->elastic && j->size != j->n))
			s->r->bad_sizes++;
		if (s->t >= j->pause_until)
			j->done += (double)j->size * s->dt;
		j->since_ckpt += s->dt;
		if (j->since_ckpt >= (double)s->o->ckpt_s) {
			j->saved = j->done;
			j->since_ckpt = 0;
		}
		if (j->done >= j->work) {
			j->done = j->saved = j->work;
			s->free += j->size;
			j->size = 0;
			j->state = SV_DONE;
			s->r->jobs_done++;
		}
	}
}
