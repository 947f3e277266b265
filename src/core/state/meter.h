/*
 * meter: the usage ledger and the cost report (issue 7 §3,
 * docs/design/metering.md).
 *
 * Every run of a job - from a start to its end, a preemption or a requeue -
 * leaves one record when it stops: its CPU, memory and devices (by model,
 * a fractional share by its fraction) and the devices' power model. Jobs
 * add business counters (training runs, inference requests) with
 * job.counter records. The ledger is part of the state: built by applying
 * journal records, carried in snapshots, so it survives restarts and
 * outlives the jobs it describes (a forgotten job keeps its records).
 *
 * The report sums the records over a window [since, until) by tenant,
 * queue or job; runs still going count up to `now`. Quantities are summed
 * as integers (milli-core-seconds, MiB-seconds, milli-device-seconds per
 * model, joules) and each record's cost is rounded once to a micro-unit of
 * the currency, so a report's total is exactly the sum of its rows and the
 * rows by tenant add up exactly to the rows by job.
 */
#ifndef XP_METER_H
#define XP_METER_H

#include <stdint.h>

#include "../../lib/err.h"
#include "../../lib/vec.h"
#include "prices.h"

struct xp_state;
struct xp_job;

enum xp_meter_by { XP_METER_TENANT, XP_METER_QUEUE, XP_METER_JOB, XP_METER_BY_N };

struct xp_meter_dev {
	uint32_t model; /* into names */
	uint32_t milli; /* device-milli held (whole devices: 1000 each) */
	uint32_t watts; /* power at full use of that share (tdp x milli / 1000) */
};

struct xp_meter_run {
	uint64_t job;
	uint32_t tenant, queue, attempt;
	int64_t start, end;
	uint64_t cpu_milli, mem_mib; /* all replicas */
	uint32_t dev0, ndev;	     /* into devs */
	uint64_t measured_j;	     /* energy the agents' power reports give (0: none; the
				      * devices' power model is used then) */
};

struct xp_meter_count {
	uint64_t job;
	uint32_t tenant, queue, name;
	int64_t at;
	uint64_t value;
};

struct xp_meter {
	XP_VEC(struct xp_meter_run) runs;
	XP_VEC(struct xp_meter_dev) devs;
	XP_VEC(struct xp_meter_count) counts;
	XP_VEC(char *) names; /* device models and counter names */
	struct xp_prices prices;
};

void xp_meter_free(struct xp_meter *m);
/* j's running attempt stops at `at`: its record */
void xp_meter_close_run(struct xp_state *st, const struct xp_job *j, int64_t at);
/* records job.counter {"id", "counters": {name: n}} and prices.set {table}
 * (decoded by the codec, src/edge/codec.c) */
struct xp_rec;
int xp_meter_counter(struct xp_state *st, const struct xp_rec *r, int64_t at, struct xp_err *err);
void xp_meter_prices(struct xp_state *st, const struct xp_prices *p);
/* record job.energy {"id", "attempt", "joules"}: the measured energy of a
 * run that has ended (the owner integrates the agents' power reports) */
int xp_meter_energy(struct xp_state *st, const struct xp_rec *r, struct xp_err *err);

int xp_meter_by_parse(const char *s);
const char *xp_meter_by_name(int by);
/* The report's rows (the JSON and CSV are the edge's, src/edge/meter_report.c):
 * usage in [since, until) by tenant, queue or job (key: its index or id),
 * running jobs counted as if they stopped at now; tenant >= 0: only that
 * tenant's usage. Rows in key order; names: what dev[] and count[] are
 * per (the ledger's names, then those only running jobs use). */
struct xp_meter_row {
	uint64_t key;
	uint64_t cpu_ms, mem_ms; /* milli-core-seconds, MiB-seconds */
	uint64_t joules;
	int64_t cost_micros;
	uint64_t *dev;	 /* per name: milli-device-seconds */
	uint64_t *count; /* per name */
};
struct xp_meter_rows {
	int by;
	char **names; /* borrowed from open */
	size_t nnames;
	struct xp_meter_row *rows;
	size_t n;
	struct xp_meter_row total;
	struct xp_meter open; /* the running jobs' runs */
};
void xp_meter_rows(const struct xp_state *st, int by, int64_t since, int64_t until, int64_t now,
		   int64_t tenant, struct xp_meter_rows *out);
void xp_meter_rows_free(struct xp_meter_rows *r);
/* A run's price per hour under p: CPU, memory, devices by model, and
 * energy - the agents' measured mean power when the run has it, else the
 * devices' power model. names: what devs' model indices name. */
double xp_meter_run_rate(const struct xp_prices *p, const struct xp_meter_dev *devs,
			 char *const *names, const struct xp_meter_run *r);
/* Hourly series over [since, since + hours h): cost (or, unpriced, GPU
 * device-hours) of tenant's usage (tenant < 0: everyone's) and the pool's
 * GPU utilisation (held GPU-hours over the GPUs registered now). Running
 * jobs count up to now. */
void xp_meter_series(const struct xp_state *st, int64_t tenant, int64_t since, size_t hours,
		     int64_t now, double *cost, double *util);

#endif
