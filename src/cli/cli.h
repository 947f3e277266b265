/*
 * cli: the map of the xpool command line. main.c dispatches a verb to its
 * cmd_*.c file; each command parses its own flags (flags.h), prints results
 * to stdout and errors to stderr as "xpool <verb>: <what failed>", and
 * returns the process exit status (0 ok, 1 failure, 2 bad usage).
 */
#ifndef XP_CLI_H
#define XP_CLI_H

#include <stdint.h>
#include <stddef.h>

#include "../lib/err.h"

#define XP_VERSION "0.1.0"

/* cmd_sim.c */
int xp_cmd_sim(int argc, char **argv);
/* cmd_cluster.c */
int xp_cmd_cluster(int argc, char **argv);
/* cmd_server.c */
int xp_cmd_server(int argc, char **argv);
int xp_cmd_dev(int argc, char **argv);

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

#endif
