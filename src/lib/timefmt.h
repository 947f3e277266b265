/*
 * timefmt: times and durations as text. Times are milliseconds since the
 * Unix epoch, written as RFC 3339 UTC with milliseconds
 * ("2026-11-29T10:00:00.123Z"); durations are "30s", "5m", "1h30m", "250ms",
 * a plain number of seconds, or Slurm's clock forms with a ':' or a '-'
 * ("MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS"). Pure functions:
 * no clock is read here.
 */
#ifndef XP_TIMEFMT_H
#define XP_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

#define XP_TIME_LEN 64
/* an hour in milliseconds */
#define XP_HOUR_MS 3600000LL

/* RFC 3339 text of t (ms since the epoch) into out[XP_TIME_LEN]. */
void xp_time_format(int64_t ms, char out[XP_TIME_LEN]);
/* Parse RFC 3339 UTC ("...Z", optional fraction) into ms; 0 or XP_EINVAL. */
int xp_time_parse(const char *s, int64_t *ms);
/* Parse a duration into ms; bounded by max_ms; 0 or XP_EINVAL / XP_ERANGE. */
int xp_duration_parse(const char *s, int64_t max_ms, int64_t *ms);
/* Slurm's time forms (sbatch --time): "MM", "MM:SS", "HH:MM:SS", "D-HH",
 * "D-HH:MM", "D-HH:MM:SS"; a bare number is minutes. 0 or XP_EINVAL /
 * XP_ERANGE. */
int xp_slurm_time_parse(const char *s, int64_t max_ms, int64_t *ms);
/* Short human form: "250ms", "42s", "5m", "2h", "3d". */
void xp_duration_short(int64_t ms, char *out, size_t len);

#endif
