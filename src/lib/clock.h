/*
 * clock: wall and monotonic time for daemons, the CLI and benchmarks.
 * The scheduling core must not call these: time reaches it as an argument.
 */
#ifndef XP_CLOCK_H
#define XP_CLOCK_H

#include <stdint.h>

/* Monotonic nanoseconds, for measuring durations. */
uint64_t xp_mono_ns(void);
/* CPU time used by the calling thread, in nanoseconds. */
uint64_t xp_thread_cpu_ns(void);
/* Peak resident set size of the process, in KiB (0 if unknown). */
uint64_t xp_peak_rss_kib(void);

#endif
