/*
 * cli: the map of the xpool command line. main.c dispatches a verb to its
 * cmd_*.c file; each command parses its own flags (flags.h), prints results
 * to stdout and errors to stderr as "xpool <verb>: <what failed>", and
 * returns the process exit status (0 ok, 1 failure, 2 bad usage). A
 * verb's entry point is xp_verb_NAME (not xp_cmd_: in src/server a struct
 * xp_cmd is a command for the owner thread).
 *
 * Beyond the verbs declared below: main.c is xpool's verb table,
 * main_daemon.c xpoold's (server, dev, agent), verbs.c the top level both
 * share, cmd_exec.c the exec from xpool into xpoold, verb_plumbing.c the
 * plumbing every client verb shares, flags.c/.h the flag parser,
 * table.c/.h aligned tables and units, util.c small helpers; the verbs
 * cmd_queue.c (queues), cmd_service.c (services), cmd_proxy.c (services
 * behind HAProxy: its configuration and the runtime sync), cmd_advise.c (forecast, advise), cmd_alerts.c,
 * cmd_top.c, cmd_bench.c (sim bench), cmd_simgavel.c (sim gavel),
 * cmd_simtenants.c (sim tenants), cmd_simshare.c (sim share), cmd_simmig.c (sim mig) and cmd_simserving.c
 * (sim serving) are named
 * where their functions are.
 */
#ifndef XP_CLI_H
#define XP_CLI_H

#include <stdint.h>
#include <stddef.h>

#include "../lib/err.h"

#define XP_VERSION "0.1.0"

/* cmd_sim.c */
int xp_verb_sim(int argc, char **argv);
/* cmd_cluster.c */
int xp_verb_cluster(int argc, char **argv);
/* cmd_server.c */
int xp_verb_server(int argc, char **argv);
int xp_verb_dev(int argc, char **argv);
/* cmd_agent.c */
int xp_verb_agent(int argc, char **argv);

/* The client verbs (docs/cli.md): each talks to the controller through
 * src/client/client.h. cmd_submit.c */
int xp_verb_submit(int argc, char **argv);
/* cmd_jobs.c */
int xp_verb_jobs(int argc, char **argv);
int xp_verb_job(int argc, char **argv);
/* cmd_jobedit.c: what changes jobs after submit */
int xp_verb_cancel(int argc, char **argv);
int xp_verb_hold(int argc, char **argv);
int xp_verb_release(int argc, char **argv);
int xp_verb_update(int argc, char **argv);
int xp_verb_explain(int argc, char **argv);
int xp_verb_logs(int argc, char **argv);
/* cmd_nodes.c */
int xp_verb_nodes(int argc, char **argv);
int xp_verb_node(int argc, char **argv);
int xp_verb_cordon(int argc, char **argv);
int xp_verb_uncordon(int argc, char **argv);
int xp_verb_drain(int argc, char **argv);
int xp_verb_devices(int argc, char **argv);
int xp_verb_cost(int argc, char **argv);
int xp_verb_prices(int argc, char **argv);
int xp_verb_count(int argc, char **argv);
int xp_verb_alerts(int argc, char **argv);
int xp_verb_top(int argc, char **argv);
int xp_verb_forecast(int argc, char **argv);
int xp_verb_advise(int argc, char **argv);
/* cmd_admin.c */
int xp_verb_services(int argc, char **argv);
int xp_verb_service(int argc, char **argv);
int xp_verb_proxy_config(int argc, char **argv);
int xp_verb_proxy_sync(int argc, char **argv);
int xp_verb_queues(int argc, char **argv);
int xp_verb_queue(int argc, char **argv);
int xp_verb_tenants(int argc, char **argv);
int xp_verb_tenant(int argc, char **argv);
int xp_verb_tokens(int argc, char **argv);
int xp_verb_token(int argc, char **argv);
/* cmd_events.c */
int xp_verb_events(int argc, char **argv);

/* cmd_submit.c: a time limit as spec.time_limit takes it - Slurm's MM,
 * MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS (a bare number is minutes, as
 * in sbatch) as seconds, or a duration (2h, 90m) as given; NULL when it is
 * neither (the message: XP_CLI_TIME_LIMIT_FORMS) */
struct json_t;
struct json_t *xp_cli_time_limit(const char *s);
#define XP_CLI_TIME_LIMIT_FORMS                                                       \
	"expected a duration: 2h, 30m, or Slurm's MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM:SS " \
	"(a bare number is minutes)"

/* verb_plumbing.c: what the client verbs share. A verb fills a struct
 * xp_cli_verb, calls xp_cli_start() (flags, --help, -o, positional
 * arguments), xp_cli_connect(), then xp_cli_call() / xp_cli_list(), and
 * returns xp_cli_end(). Errors print "xpool VERB: ..." and give exit status
 * 1 (controller or transport) or 2 (bad usage, found before any request). */
struct json_t;
/* A usage report (GET /v1/usage, or the simulator's) as a table (cmd_cost.c). */
void xp_cli_print_cost(const struct json_t *rep);
struct xp_client;
struct xp_flag;
struct xp_sb;
struct xp_table;

/* The flags every client verb takes; put them last in its flag table. */
/* clang-format off */
#define XP_CLIENT_FLAGS \
	{ "addr", XP_FLAG_STR, "ADDR", "controller address (else $XPOOL_ADDR, the config file)" }, \
	{ "token", XP_FLAG_STR, "TOKEN", "API token (else $XPOOL_TOKEN, the config file)" }, \
	{ "ca", XP_FLAG_STR, "FILE", "https://: the CA file the controller's certificate is verified against (else $XPOOL_CA, the config file, the system's CAs)" }, \
	{ "output", XP_FLAG_STR, "FORMAT", "table or json", 'o' }
/* clang-format on */

struct xp_cli_verb {
	const char *verb;     /* in messages: "jobs", "queue create" */
	const char *synopsis; /* "xpool job ID [flags]" */
	const char *about;
	const char *args;	/* the positional arguments in errors ("ID"), NULL = none */
	int min_args, max_args; /* max_args -1: any number */
	int rest;		/* keep what follows "--" apart, in rest (submit's command) */
};

struct xp_cli {
	const struct xp_cli_verb *v;
	struct xp_flag *flags;
	char **args; /* positional arguments (strings borrowed from argv) */
	int nargs;
	char **rest; /* after "--" when v->rest */
	int nrest;
	int json; /* -o json */
	int status;
	struct xp_client *client;
	char *token_from; /* where the token came from, for hints */
	struct xp_err err;
};

/* Parse argv; 0 to go on, or 1 to return x->status (0 after --help, 2 on
 * bad usage, already reported). */
int xp_cli_start(struct xp_cli *x, const struct xp_cli_verb *v, struct xp_flag *flags, int argc,
		 char **argv);
/* Resolve the address and the token and make the client; 0 or -1 (x->status set). */
int xp_cli_connect(struct xp_cli *x);
/* Free what x holds; returns status. */
int xp_cli_end(struct xp_cli *x, int status);
/* "xpool VERB: ..." on stderr; returns status. */
int xp_cli_errorf(struct xp_cli *x, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Report x->err (from the controller or the transport); returns 1. */
int xp_cli_fail_api(struct xp_cli *x);
/* One JSON request; 0 with *reply (new reference), or -1 with x->err set. */
int xp_cli_call(struct xp_cli *x, const char *method, const char *path, struct json_t *body,
		struct json_t **reply);
/* GET a list (path may hold a query) and, when all, follow "next" through
 * every page; *reply is the first page with key's array holding every
 * item and "next" the last page's. 0 or -1 with x->err set. */
int xp_cli_list(struct xp_cli *x, const char *path, const char *key, int all,
		struct json_t **reply);
/* Pretty JSON and a newline on stdout. */
void xp_cli_print_json(const struct json_t *v);
/* Exit-2 checks of positional arguments: a job id, a name (docs/api.md's rule). */
int xp_cli_parse_id(struct xp_cli *x, const char *what, const char *s, long long *id);
int xp_cli_check_name(struct xp_cli *x, const char *what, const char *s);
/* 1 when s is a valid name: 1-63 of [A-Za-z0-9._-], starting with a letter or digit. */
int xp_cli_valid_name(const char *s);
/* Reading replies: a string member or NULL; an integer member (0 or -1
 * when absent); any scalar as text (malloc'd, NULL for null/absent). */
const char *xp_cli_jstr(const struct json_t *o, const char *key);
int xp_cli_jint(const struct json_t *o, const char *key, long long *v);
char *xp_cli_jtext(const struct json_t *v);
/* Table cells from a member: text, integer, CPU milli, MiB, age since an
 * RFC 3339 time ("-" when absent). */
void xp_cli_cell_str(struct xp_table *t, const struct json_t *o, const char *key);
void xp_cli_cell_int(struct xp_table *t, const struct json_t *o, const char *key);
void xp_cli_cell_cpu(struct xp_table *t, const struct json_t *o, const char *key);
void xp_cli_cell_mib(struct xp_table *t, const struct json_t *o, const char *key);
void xp_cli_cell_age(struct xp_table *t, const struct json_t *o, const char *key);
/* Two-word verbs (cmd_admin.c): `xpool WORD SUB ...` runs SUB, or lists
 * the choices. */
struct xp_cli_sub {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *about;
};
int xp_cli_dispatch(const char *word, const struct xp_cli_sub *subs, int argc, char **argv);
/* A binary's main (verbs.c): help, version, then argv[1] among verbs. */
int xp_cli_main(const char *prog, const char *blurb, const struct xp_cli_sub *verbs, int argc,
		char **argv);
/* Send one mutation (connecting first) and print done, or the reply with
 * -o json; returns the exit status. */
int xp_cli_mutate(struct xp_cli *x, const char *method, const char *path, struct json_t *body,
		  const char *done);
/* DELETE prefix/NAME; what names the argument in errors. */
int xp_cli_delete_named(int argc, char **argv, const struct xp_cli_verb *verb, const char *prefix,
			const char *what, int numeric);
/* A read-only verb: parse flags, GET path (with ?NAME=value for each of
 * query's flags given), print the reply with print, or as JSON with -o
 * json; returns the exit status. flags must end with XP_CLIENT_FLAGS. */
int xp_cli_get_verb(int argc, char **argv, const struct xp_cli_verb *verb, struct xp_flag *flags,
		    const char *path, const char *const *query,
		    void (*print)(const struct json_t *));
/* Connect, send one bodiless request, print the reply (with print, or as
 * JSON with -o json); the exit status. */
int xp_cli_call_print(struct xp_cli *x, const char *method, const char *path,
		      void (*print)(const struct json_t *));
/* Append ?NAME=value for each flag of names (NULL-ended) that was given. */
void xp_cli_query_flags(struct xp_sb *path, struct xp_flag *flags, const char *const *names);
/* Wall-clock milliseconds since the epoch. */
long long xp_cli_now_ms(void);

/* util.c */
int xp_cli_fail(const char *verb, const struct xp_err *err, int status);
/* "42-51", "1,2,5-9" -> a malloc'd list; max entries bounded. */
int xp_parse_seeds(const char *spec, uint64_t **out, size_t *n, struct xp_err *err);
/* Split "a,b,c" into malloc'd strings (the array and strings are malloc'd). */
char **xp_split_list(const char *s, size_t *n);
void xp_free_list(char **v, size_t n);
int xp_parse_int_flag(const char *flag, const char *s, long min, long max, long *out,
		      struct xp_err *err);
int xp_parse_double_flag(const char *flag, const char *s, double min, double max, double *out,
			 struct xp_err *err);
/* "a,b,c" -> a malloc'd array of numbers in min..max; *out untouched on error */
int xp_parse_doubles_flag(const char *flag, const char *spec, double min, double max, double **out,
			  size_t *n, struct xp_err *err);
/* $XP_SHARED_DIR/rel, or ../shared/rel (malloc'd) */
char *xp_cli_shared_path(const char *rel);

#endif
