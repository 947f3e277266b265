/*
 * xp_bench_replay: the multi-tenant job mix of `xpool sim tenants`, replayed
 * in real time into a real scheduler - xpool's controller or the Slurm
 * peer (../shared/bench/slurm) - and the queueing time and utilisation read
 * back from the scheduler's own records (issue 5 §8, the side-by-side run;
 * bench/tenancy_slurm.sh drives it, docs/results/tenancy.md has the
 * figures).
 *
 *   xp_bench_replay trace  [MIX]                      the jobs, one line each
 *   xp_bench_replay replay [MIX] --system slurm|xpool [--xpool BIN] --t0-file F
 *   xp_bench_replay stats  [MIX] --t0-file F (--slurm JOBCOMP | --jobs-json J --events E)
 *
 *   MIX: --jobs N (1500) --load L (1.2) --seed S (1) --scale K (60)
 *        --gpus G (3072, the 512-node inventory)
 *
 * The trace is xp_tsim_gen()'s (src/sim/tenants.c): 4 tenants with shares
 * 40/30/20/10 %, training gangs (1, 2 or 4 replicas of 8 GPUs, 32 cores,
 * 256 GiB; priority 5), inference (1 GPU, 4 cores; priority 10), batch (1-2
 * GPUs, 8 cores; priority 0), arrivals spread so that the offered GPU-time
 * is L x G x the span. Times are divided by K (60: an hour of the trace is
 * a minute of the run). Both systems get the same requests, with two
 * adaptations the peer needs: a half-GPU inference job asks for a whole GPU
 * (the peer has no GPU sharing configured), and time limits are 1.5 x the
 * run time rounded up to whole minutes (Slurm's unit).
 *
 * replay runs one client process per job at its arrival time, as a user
 * would: `sbatch ... --wrap 'sleep D'` (priority through --nice, since
 * QOS needs slurmdbd), or `xpool submit ... --duration D` into queues t0..t3
 * (bench/tenancy_slurm.sh creates them). The start of the replay (epoch ms)
 * goes to --t0-file. Job names are t<tenant>-<kind>-<index>.
 *
 * stats reads the records: Slurm's jobcomp log (1 s resolution) or the
 * xpool controller's jobs (`xpool jobs --all -o json`: names, submission,
 * and for a job started once its start and end) and events (`xpool events
 * -o json`: the starts and ends of jobs started more than once; ms). Queueing time is
 * first start - submission, per tenant and per kind (p50 / p99 / mean);
 * utilisation is the GPU-time of the running intervals inside the span
 * over G x the span. Jobs never started are counted, not hidden.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/timefmt.h"
#include "lib/xalloc.h"
#include "sim/tenants.h"

#define MAX_CHILDREN 16

static const char *const kind_names[XP_TSIM_NKINDS] = { "batch", "train", "infer" };

struct mix {
	struct xp_tsim_opts o;
	double gpus, scale, span_s;
	struct xp_tsim_job *j; /* by index; arrive and dur already scaled (ms) */
	int64_t *limit_min;
	/* read back */
	int64_t *submit, *start, *busy_ms; /* ms from t0; -1 none */
	uint8_t *single;		   /* xpool: started once, figures from the job object */
	int64_t t0;
};

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("xp_bench_replay: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void build(struct mix *m)
{
	double span_h;
	m->j = XNEWV(struct xp_tsim_job, m->o.jobs);
	xp_tsim_gen(&m->o, m->gpus, m->j, &span_h);
	m->span_s = span_h * 3600 / m->scale;
	m->limit_min = XNEWV(int64_t, m->o.jobs);
	for (uint32_t k = 0; k < m->o.jobs; k++) {
		struct xp_tsim_job *x = &m->j[k];
		x->arrive = (int64_t)(x->arrive / m->scale);
		x->dur = (int64_t)(x->dur / m->scale);
		if (x->dur < 1000)
			x->dur = 1000;
		x->milli = 1000;
		m->limit_min[k] = (x->dur * 3 / 2 + 59999) / 60000;
	}
}

/* job indices in arrival order */
static struct mix *sort_mix;
static int by_arrival(const void *a, const void *b)
{
	const struct xp_tsim_job *x = &sort_mix->j[*(const uint32_t *)a];
	const struct xp_tsim_job *y = &sort_mix->j[*(const uint32_t *)b];
	return x->arrive < y->arrive ? -1 : x->arrive > y->arrive;
}

static uint32_t *arrival_order(struct mix *m)
{
	uint32_t *ord = XNEWV(uint32_t, m->o.jobs);
	for (uint32_t k = 0; k < m->o.jobs; k++)
		ord[k] = k;
	sort_mix = m;
	qsort(ord, m->o.jobs, sizeof(*ord), by_arrival);
	return ord;
}

static void job_name(const struct mix *m, uint32_t k, char *out, size_t len)
{
	snprintf(out, len, "t%u-%s-%u", m->j[k].tenant, kind_names[xp_tsim_kind(&m->j[k])], k);
}

static void cmd_trace(struct mix *m)
{
	uint32_t *ord = arrival_order(m);
	printf("# %u jobs, load %.2f of %.0f GPUs, span %.0f s (scale 1/%.0f), seed %llu\n",
	       m->o.jobs, m->o.load, m->gpus, m->span_s, m->scale, (unsigned long long)m->o.seed);
	printf("name\tarrive_s\ttenant\tpriority\treplicas\tgpus\tcpu\tmem_gib\tdur_s\tlimit_min\n");
	for (uint32_t i = 0; i < m->o.jobs; i++) {
		uint32_t k = ord[i];
		const struct xp_tsim_job *x = &m->j[k];
		char name[64];
		job_name(m, k, name, sizeof(name));
		printf("%s\t%.3f\t%u\t%d\t%u\t%u\t%u\t%u\t%.3f\t%lld\n", name, x->arrive / 1e3,
		       x->tenant, x->prio, x->replicas, x->gpus, x->cpu, x->mem_gib, x->dur / 1e3,
		       (long long)m->limit_min[k]);
	}
	free(ord);
}

/* the argv of one submission, into a (strings in buf) */
static void submit_argv(const struct mix *m, uint32_t k, const char *system, const char *xpool,
			char buf[24][96], char **a)
{
	const struct xp_tsim_job *x = &m->j[k];
	char name[64];
	int n = 0;
	job_name(m, k, name, sizeof(name));
#define ARG(...) (snprintf(buf[n], sizeof(buf[n]), __VA_ARGS__), a[n] = buf[n], n++)
	if (!strcmp(system, "slurm")) {
		a[n++] = "sbatch";
		a[n++] = "--parsable";
		a[n++] = "-o";
		a[n++] = "/dev/null";
		a[n++] = "-e";
		a[n++] = "/dev/null";
		a[n++] = "--ntasks-per-node=1";
		ARG("--job-name=%s", name);
		ARG("--nodes=%u", x->replicas);
		ARG("--cpus-per-task=%u", x->cpu);
		ARG("--mem=%uG", x->mem_gib);
		ARG("--gres=gpu:%u", x->gpus);
		ARG("--time=%lld", (long long)m->limit_min[k]);
		ARG("--nice=%d", -1000 * x->prio);
		a[n++] = "--wrap";
		ARG("sleep %.3f", x->dur / 1e3);
	} else {
		a[n++] = (char *)xpool;
		a[n++] = "submit";
		a[n++] = "-q";
		ARG("--name=%s", name);
		ARG("--tenant=t%u", x->tenant);
		ARG("--queue=t%u", x->tenant);
		ARG("--priority=%d", x->prio);
		ARG("--replicas=%u", x->replicas);
		ARG("--cpu=%u", x->cpu);
		ARG("--memory=%uGi", x->mem_gib);
		ARG("--gpus=%u", x->gpus);
		ARG("--duration=%lldms", (long long)x->dur);
		ARG("--time-limit=%lldm", (long long)m->limit_min[k]);
	}
	a[n] = NULL;
#undef ARG
}

static int reap(int block, unsigned *failed)
{
	int st;
	pid_t p = waitpid(-1, &st, block ? 0 : WNOHANG);
	if (p <= 0)
		return 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		(*failed)++;
	return 1;
}

static void cmd_replay(struct mix *m, const char *system, const char *xpool, const char *t0_file)
{
	if (strcmp(system, "slurm") && strcmp(system, "xpool"))
		die("--system: expected slurm or xpool, got '%s'", system);
	uint32_t *ord = arrival_order(m);
	unsigned running = 0, failed = 0, late = 0;
	int64_t t0 = wall_ms(), worst = 0;
	FILE *f = fopen(t0_file, "w");
	if (!f || fprintf(f, "%lld\n", (long long)t0) < 0 || fclose(f) != 0)
		die("%s: %s", t0_file, strerror(errno));
	for (uint32_t i = 0; i < m->o.jobs; i++) {
		uint32_t k = ord[i];
		int64_t due = t0 + m->j[k].arrive;
		while (running && reap(0, &failed))
			running--;
		for (int64_t now = wall_ms(); now < due; now = wall_ms()) {
			struct timespec ts = { 0, (long)(due - now < 20 ? due - now : 20) * 1000000L };
			nanosleep(&ts, NULL);
			while (running && reap(0, &failed))
				running--;
		}
		while (running >= MAX_CHILDREN) {
			reap(1, &failed);
			running--;
		}
		int64_t lag = wall_ms() - due;
		if (lag > 1000)
			late++;
		if (lag > worst)
			worst = lag;
		char buf[24][96], *argv[32];
		submit_argv(m, k, system, xpool, buf, argv);
		pid_t p = fork();
		if (p < 0)
			die("fork: %s", strerror(errno));
		if (p == 0) {
			int dn = open("/dev/null", O_WRONLY);
			if (dn >= 0)
				dup2(dn, 1);
			execvp(argv[0], argv);
			_exit(127);
		}
		running++;
	}
	while (running && reap(1, &failed))
		running--;
	printf("replay: %u jobs into %s over %.0f s; %u submissions failed; %u started over 1 s "
	       "late (worst %lld ms)\n",
	       m->o.jobs, system, (wall_ms() - t0) / 1e3, failed, late, (long long)worst);
	free(ord);
	if (failed)
		exit(1);
}

/* "t2-train-123" -> 123, or -1 */
static long name_index(const struct mix *m, const char *name)
{
	const char *d = name ? strrchr(name, '-') : NULL;
	char *end;
	if (!d || name[0] != 't')
		return -1;
	long k = strtol(d + 1, &end, 10);
	return *end || k < 0 || k >= (long)m->o.jobs ? -1 : k;
}

/* the GPU-ms of [a, b) inside the span, for job k */
static void add_busy(struct mix *m, uint32_t k, int64_t a, int64_t b)
{
	int64_t span = (int64_t)(m->span_s * 1000);
	if (a < 0)
		a = 0;
	if (b > span)
		b = span;
	if (b > a)
		m->busy_ms[k] += (b - a) * m->j[k].gpus * m->j[k].replicas;
}

/* Slurm's "2026-11-29T14:35:01" (UTC here) as ms, or -1 */
static int64_t slurm_time(const char *s)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *e = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	return e && !*e ? (int64_t)timegm(&tm) * 1000 : -1;
}

static void read_slurm(struct mix *m, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	if (!f)
		die("%s: %s", path, strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		char *name = NULL, *sub = NULL, *st = NULL, *en = NULL, *nodes = NULL, *save;
		for (char *w = strtok_r(line, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
			if (!strncmp(w, "Name=", 5)) /* jobcomp/filetxt's job name */
				name = w + 5;
			else if (!strncmp(w, "SubmitTime=", 11))
				sub = w + 11;
			else if (!strncmp(w, "StartTime=", 10))
				st = w + 10;
			else if (!strncmp(w, "EndTime=", 8))
				en = w + 8;
			else if (!strncmp(w, "NodeList=", 9))
				nodes = w + 9;
		}
		long k = name_index(m, name);
		if (k < 0)
			continue;
		int64_t s0 = slurm_time(sub), s1 = slurm_time(st), s2 = slurm_time(en);
		if (s0 < 0)
			die("%s: job %s: no SubmitTime", path, name);
		m->submit[k] = s0 - m->t0;
		/* a job cancelled while pending has no nodes */
		if (s1 < 0 || !nodes || !strcmp(nodes, "(null)") || !*nodes)
			continue;
		m->start[k] = s1 - m->t0;
		add_busy(m, (uint32_t)k, s1 - m->t0, (s2 < 0 ? s1 : s2) - m->t0);
	}
	free(line);
	fclose(f);
}

/* `xpool jobs --all -o json`: a JSON array of job objects (or {"jobs": [...]}) */
static long long *xpool_ids(struct mix *m, const char *path, size_t *nid, long long *first)
{
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je), *arr, *j;
	if (!doc)
		die("%s: line %d: %s", path, je.line, je.text);
	arr = json_is_array(doc) ? doc : json_object_get(doc, "jobs");
	if (!json_is_array(arr))
		die("%s: not a list of jobs", path);
	size_t i;
	long long lo = -1, hi = -1;
	json_array_foreach(arr, i, j)
	{
		long long id = json_integer_value(json_object_get(j, "id"));
		if (name_index(m, json_string_value(json_object_get(j, "name"))) < 0)
			continue;
		if (lo < 0 || id < lo)
			lo = id;
		if (id > hi)
			hi = id;
	}
	*first = lo;
	*nid = lo < 0 ? 0 : (size_t)(hi - lo + 1);
	long long *id_of = XNEWV(long long, *nid + 1);
	for (size_t k = 0; k < *nid; k++)
		id_of[k] = -1;
	json_array_foreach(arr, i, j)
	{
		long long id = json_integer_value(json_object_get(j, "id"));
		long k = name_index(m, json_string_value(json_object_get(j, "name")));
		int64_t t;
		if (k < 0)
			continue;
		id_of[id - lo] = k;
		if (xp_time_parse(json_string_value(json_object_get(j, "submitted_at")), &t) == 0)
			m->submit[k] = t - m->t0;
		/* a job started once: its object says when it ran, whatever the events hold */
		int64_t s0, s1;
		if (json_integer_value(json_object_get(j, "attempts")) == 1 &&
		    xp_time_parse(json_string_value(json_object_get(j, "started_at")), &s0) == 0) {
			m->start[k] = s0 - m->t0;
			m->single[k] = 1;
			if (xp_time_parse(json_string_value(json_object_get(j, "finished_at")), &s1) < 0)
				s1 = m->t0 + (int64_t)(m->span_s * 1000);
			add_busy(m, (uint32_t)k, s0 - m->t0, s1 - m->t0);
		}
	}
	json_decref(doc);
	return id_of;
}

/* the controller's events: `xpool events -o json`, {"events": [...]} */
static void read_xpool(struct mix *m, const char *jobs, const char *path)
{
	size_t nid, i;
	long long first_id;
	long long *id_of = xpool_ids(m, jobs, &nid, &first_id);
	int64_t *run_since = XNEWV(int64_t, m->o.jobs);
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je), *evs, *ev;
	if (!doc)
		die("%s: line %d: %s", path, je.line, je.text);
	evs = json_object_get(doc, "events");
	if (!json_is_array(evs))
		die("%s: no events list", path);
	for (uint32_t k = 0; k < m->o.jobs; k++)
		run_since[k] = -1;
	json_array_foreach(evs, i, ev)
	{
		const char *type = json_string_value(json_object_get(ev, "type"));
		const char *at = json_string_value(json_object_get(ev, "at"));
		long long id = json_integer_value(json_object_get(ev, "job"));
		int64_t t;
		long k = id >= first_id && id - first_id < (long long)nid ? (long)id_of[id - first_id]
									  : -1;
		if (k < 0 || m->single[k] || !type || !at || xp_time_parse(at, &t) < 0)
			continue;
		t -= m->t0;
		if (!strcmp(type, "job.started")) {
			if (m->start[k] < 0)
				m->start[k] = t;
			run_since[k] = t;
		} else if (run_since[k] >= 0 && strcmp(type, "job.submitted")) {
			/* finished, cancelled, preempted or requeued */
			add_busy(m, (uint32_t)k, run_since[k], t);
			run_since[k] = -1;
		}
	}
	for (uint32_t k = 0; k < m->o.jobs; k++)
		if (run_since[k] >= 0)
			add_busy(m, k, run_since[k], (int64_t)(m->span_s * 1000));
	json_decref(doc);
	free(run_since);
	free(id_of);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* p50 / p99 / mean of the waits of jobs matching (tenant or kind) */
static void line(const struct mix *m, const char *label, int tenant, int kind)
{
	int64_t *w = XNEWV(int64_t, m->o.jobs);
	size_t n = 0, unstarted = 0, missing = 0;
	double sum = 0;
	for (uint32_t k = 0; k < m->o.jobs; k++) {
		if ((tenant >= 0 && (int)m->j[k].tenant != tenant) ||
		    (kind >= 0 && xp_tsim_kind(&m->j[k]) != kind))
			continue;
		if (m->submit[k] < 0)
			missing++;
		else if (m->start[k] < 0)
			unstarted++;
		else {
			w[n] = m->start[k] - m->submit[k];
			sum += w[n++];
		}
	}
	qsort(w, n, sizeof(*w), cmp_i64);
	double p50 = n ? w[(n - 1) / 2] / 1e3 : NAN, p99 = n ? w[(size_t)((n - 1) * 0.99)] / 1e3 : NAN;
	printf("%-10s %6zu %9.1f %9.1f %9.1f %9zu %8zu\n", label, n, p50, p99,
	       n ? sum / n / 1e3 : NAN, unstarted, missing);
	free(w);
}

static void cmd_stats(struct mix *m, const char *t0_file, const char *slurm, const char *jobs,
		      const char *events)
{
	FILE *f = fopen(t0_file, "r");
	long long t0;
	if (!f || fscanf(f, "%lld", &t0) != 1)
		die("%s: no start time", t0_file);
	fclose(f);
	m->t0 = t0;
	m->submit = XNEWV(int64_t, m->o.jobs);
	m->start = XNEWV(int64_t, m->o.jobs);
	m->busy_ms = XNEWV(int64_t, m->o.jobs);
	m->single = xcalloc(m->o.jobs, 1);
	for (uint32_t k = 0; k < m->o.jobs; k++) {
		m->submit[k] = m->start[k] = -1;
		m->busy_ms[k] = 0;
	}
	if (slurm)
		read_slurm(m, slurm);
	else if (jobs && events)
		read_xpool(m, jobs, events);
	else
		die("stats: give --slurm JOBCOMP, or --jobs-json FILE and --events FILE");
	double busy = 0;
	for (uint32_t k = 0; k < m->o.jobs; k++)
		busy += (double)m->busy_ms[k];
	printf("system %s: %u jobs, span %.0f s; GPU utilisation over the span %.1f %%\n",
	       slurm ? "slurm" : "xpool", m->o.jobs, m->span_s,
	       100 * busy / (m->gpus * m->span_s * 1000));
	printf("%-10s %6s %9s %9s %9s %9s %8s\n", "who", "jobs", "wait_p50", "wait_p99",
	       "wait_mean", "unstarted", "missing");
	char label[16];
	for (int t = 0; t < (int)m->o.tenants; t++) {
		snprintf(label, sizeof(label), "t%d", t);
		line(m, label, t, -1);
	}
	for (int k = XP_TSIM_NKINDS - 1; k >= 0; k--)
		line(m, kind_names[k], -1, k);
	line(m, "all", -1, -1);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "jobs", 1, 0, 'n' },	  { "load", 1, 0, 'l' },   { "seed", 1, 0, 's' },
		{ "scale", 1, 0, 'k' },	  { "gpus", 1, 0, 'g' },   { "system", 1, 0, 'y' },
		{ "xpool", 1, 0, 'x' },	  { "t0-file", 1, 0, 't' }, { "slurm", 1, 0, 'S' },
		{ "events", 1, 0, 'E' },  { "jobs-json", 1, 0, 'J' }, { 0, 0, 0, 0 },
	};
	struct mix m;
	const char *system = NULL, *xpool = "xpool", *t0_file = NULL, *slurm = NULL, *events = NULL,
		   *jobs = NULL;
	memset(&m, 0, sizeof(m));
	xp_tsim_defaults(&m.o);
	m.o.jobs = 1500;
	m.o.load = 1.2;
	m.gpus = 3072;
	m.scale = 60;
	if (argc < 2)
		die("usage: xp_bench_replay trace|replay|stats [--jobs N --load L --seed S --scale K "
		    "--gpus G] [--system slurm|xpool --xpool BIN] [--t0-file F] [--slurm JOBCOMP | "
		    "--jobs-json FILE --events FILE]");
	const char *cmd = argv[1];
	optind = 2;
	for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
		switch (c) {
		case 'n': m.o.jobs = (uint32_t)atol(optarg); break;
		case 'l': m.o.load = atof(optarg); break;
		case 's': m.o.seed = (uint64_t)atoll(optarg); break;
		case 'k': m.scale = atof(optarg); break;
		case 'g': m.gpus = atof(optarg); break;
		case 'y': system = optarg; break;
		case 'x': xpool = optarg; break;
		case 't': t0_file = optarg; break;
		case 'S': slurm = optarg; break;
		case 'E': events = optarg; break;
		case 'J': jobs = optarg; break;
		default: die("bad flag (see the usage at the top of bench/tenancy/bench_replay.c)");
		}
	}
	if (m.o.jobs < 1 || m.o.load <= 0 || m.scale <= 0 || m.gpus <= 0)
		die("--jobs, --load, --scale and --gpus must be positive");
	signal(SIGPIPE, SIG_IGN);
	build(&m);
	if (!strcmp(cmd, "trace"))
		cmd_trace(&m);
	else if (!strcmp(cmd, "replay")) {
		if (!system || !t0_file)
			die("replay: --system and --t0-file are required");
		cmd_replay(&m, system, xpool, t0_file);
	} else if (!strcmp(cmd, "stats")) {
		if (!t0_file)
			die("stats: --t0-file is required");
		cmd_stats(&m, t0_file, slurm, jobs, events);
	} else
		die("unknown command '%s' (trace, replay or stats)", cmd);
	return 0;
}
