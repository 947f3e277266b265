/* grid: parallel OpenB runs and their CSV output (see grid.h). */
#include "grid.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/sched/policy.h"
#include "../lib/fileio.h"
#include "../lib/xalloc.h"

struct shared {
	const struct xp_grid *g;
	struct xp_grid_cell *cells;
	size_t total, next, done;
	pthread_mutex_t mu;
};

static void *worker(void *arg)
{
	struct shared *sh = arg;
	const struct xp_grid *g = sh->g;

	for (;;) {
		pthread_mutex_lock(&sh->mu);
		size_t i = sh->next++;
		pthread_mutex_unlock(&sh->mu);
		if (i >= sh->total)
			break;
		struct xp_grid_cell *cell = &sh->cells[i];
		struct xp_openb_run_opts o = {
			.policy = g->policies[cell->policy]->name,
			.seed = g->seeds[cell->seed],
			.tune = g->tune,
			.tiebreak = g->tiebreak,
			.no_index = g->no_index,
			.window = g->window,
			.batch = g->batch,
			.bound = g->bound,
		};
		struct xp_err err = { 0 };
		cell->rc = xp_openb_run(g->c, g->traces[cell->trace], g->m[cell->trace],
					g->nm[cell->trace], &o, &cell->res, &err);
		if (cell->rc < 0)
			snprintf(cell->err, sizeof(cell->err), "%s", err.text);
		pthread_mutex_lock(&sh->mu);
		sh->done++;
		if (g->progress)
			g->progress(g->ctx, sh->done, sh->total);
		pthread_mutex_unlock(&sh->mu);
	}
	return NULL;
}

int xp_grid_run(const struct xp_grid *g, struct xp_grid_cell **cells, struct xp_err *err)
{
	struct shared sh = { .g = g };
	int threads = g->threads > 0 ? g->threads : 1;
	pthread_t *tid;

	sh.total = g->ntraces * g->npolicies * g->nseeds;
	sh.cells = XNEWV(struct xp_grid_cell, sh.total ? sh.total : 1);
	for (size_t t = 0, i = 0; t < g->ntraces; t++)
		for (size_t p = 0; p < g->npolicies; p++)
			for (size_t s = 0; s < g->nseeds; s++, i++) {
				sh.cells[i].trace = t;
				sh.cells[i].policy = p;
				sh.cells[i].seed = s;
			}
	pthread_mutex_init(&sh.mu, NULL);
	if ((size_t)threads > sh.total)
		threads = (int)(sh.total ? sh.total : 1);
	tid = XNEWV(pthread_t, (size_t)threads);
	for (int i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, worker, &sh) != 0) {
			threads = i;
			break;
		}
	if (threads == 0)
		worker(&sh);
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	pthread_mutex_destroy(&sh.mu);
	free(tid);
	*cells = sh.cells;
	for (size_t i = 0; i < sh.total; i++)
		if (sh.cells[i].rc < 0)
			return xp_errf(err, sh.cells[i].rc, "%s / %s / seed %llu: %s",
				       g->traces[sh.cells[i].trace]->workload,
				       g->policies[sh.cells[i].policy]->name,
				       (unsigned long long)g->seeds[sh.cells[i].seed],
				       sh.cells[i].err);
	return 0;
}

static int mkdirs(const char *dir)
{
	char buf[4096];
	size_t len = strlen(dir);
	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, dir, len + 1);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(buf, 0755) != 0 && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

enum series { ALLOC, FRAG, RATIO };

static int write_series(const char *dir, const char *name, enum series which,
			const struct xp_grid *g, const struct xp_grid_cell *cells, size_t n,
			struct xp_err *err)
{
	char path[4096];
	struct xp_afile af;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((rc = xp_afile_open(&af, path, err)) < 0)
		return rc;
	FILE *f = af.f;
	fputs("workload,sc_policy,tune,seed", f);
	if (which == ALLOC)
		fputs(",total_gpus", f);
	for (int x = 0; x < XP_OPENB_BUCKETS; x++)
		fprintf(f, ",%d", x);
	fputc('\n', f);
	for (size_t i = 0; i < n; i++) {
		const struct xp_grid_cell *c = &cells[i];
		const struct xp_openb_result *r = &c->res;
		fprintf(f, "%s,%s,%g,%llu", g->traces[c->trace]->workload,
			g->policies[c->policy]->label, g->tune,
			(unsigned long long)g->seeds[c->seed]);
		if (which == ALLOC)
			fprintf(f, ",%llu", (unsigned long long)r->total_gpus);
		for (int x = 0; x < XP_OPENB_BUCKETS; x++) {
			if (!r->have[x]) {
				fputc(',', f);
				continue;
			}
			double v = which == ALLOC  ? r->alloc[x]
				   : which == FRAG ? r->frag_amt[x]
						   : r->frag_ratio[x];
			fprintf(f, which == RATIO ? ",%.4f" : ",%.2f", v);
		}
		fputc('\n', f);
	}
	return xp_afile_commit(&af, err);
}

static int write_runs(const char *dir, const struct xp_grid *g, const struct xp_grid_cell *cells,
		      size_t n, struct xp_err *err)
{
	char path[4096];
	struct xp_afile af;
	int rc;

	snprintf(path, sizeof(path), "%s/runs.csv", dir);
	if ((rc = xp_afile_open(&af, path, err)) < 0)
		return rc;
	fputs("workload,sc_policy,tune,seed,pods,failed,cpu_ms,unalloc_100,unalloc_130,window,"
	      "budget,"
	      "rollouts,bound_100\n",
	      af.f);
	for (size_t i = 0; i < n; i++) {
		const struct xp_grid_cell *c = &cells[i];
		const struct xp_openb_result *r = &c->res;
		fprintf(af.f, "%s,%s,%g,%llu,%zu,%zu,%.1f,%.2f,%.2f,%zu,%u,%llu,%.2f\n",
			g->traces[c->trace]->workload, g->policies[c->policy]->label, g->tune,
			(unsigned long long)g->seeds[c->seed], r->pods, r->failed,
			(double)r->cpu_ns / 1e6, r->have[100] ? 100 - r->alloc[100] : -1,
			r->have[130] ? 100 - r->alloc[130] : -1, g->window > 1 ? g->window : 1,
			g->policies[c->policy]->optimise ? g->batch.budget : 0,
			(unsigned long long)r->rollouts, r->bound_100);
	}
	return xp_afile_commit(&af, err);
}

int xp_grid_write(const char *dir, const struct xp_grid *g, const struct xp_grid_cell *cells,
		  struct xp_err *err)
{
	size_t n = g->ntraces * g->npolicies * g->nseeds;
	int rc = mkdirs(dir);
	if (rc < 0)
		return xp_errf(err, rc, "%s: cannot create: %s", dir, strerror(-rc));
	if ((rc = write_series(dir, "analysis_allo_discrete.csv", ALLOC, g, cells, n, err)) < 0 ||
	    (rc = write_series(dir, "analysis_frag_discrete.csv", FRAG, g, cells, n, err)) < 0 ||
	    (rc = write_series(dir, "analysis_frag_ratio_discrete.csv", RATIO, g, cells, n, err)) <
		    0 ||
	    (rc = write_runs(dir, g, cells, n, err)) < 0)
		return rc;
	return 0;
}
