/*
 * svg: line charts as standalone SVG files, for the simulator's plots
 * (utilisation, fragmentation and cost over time; unallocated GPU against
 * arrived). No dependency: the file is written by hand, axes with round
 * ticks, one polyline per series and a legend.
 */
#ifndef XP_SIM_SVG_H
#define XP_SIM_SVG_H

#include <stddef.h>

#include "../lib/err.h"

struct xp_svg_series {
	const char *name;
	const double *x, *y;
	size_t n;
	unsigned colour; /* 1 + a palette index; 0: by the series' position */
	int dashed;	 /* drawn dashed (and so in the legend) */
};

/* Write the chart to path; 0 or < 0 with err. */
int xp_svg_lines(const char *path, const char *title, const char *xlabel, const char *ylabel,
		 const struct xp_svg_series *s, size_t ns, struct xp_err *err);

#endif
