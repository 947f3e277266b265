/*
 * gittins: the Gittins index of a job from the sizes of the jobs seen so
 * far, for scheduling without knowing any job's size (Tiresias' 2D-Gittins;
 * Gittins 1989; Aalto, Ayesta and Righter 2009).
 *
 * A job that has received service a is worth running next in proportion to
 *
 *   G(a) = max over b > a of  P(a < X <= b) / E[min(X, b) - a ; X > a]
 *
 * the best rate at which service spent on it completes jobs. For a size
 * distribution with a falling hazard rate G falls with a and the policy is
 * least attained service; where sizes cluster (a job near the top of a
 * cluster is about to finish) it is not, and Gittins minimises the mean
 * response time of a single server among policies that know only the
 * distribution.
 *
 * The distribution is learned: sizes of finished jobs (events) and the
 * attained service of jobs still running (right-censored: they are at least
 * that big) give the Kaplan-Meier estimate on a log-spaced grid of bins, a
 * running job counted at risk through its whole bin. Within a bin the mass
 * is spread evenly, so the index moves smoothly with service (atoms would
 * make it leap as a job nears one); the best stopping point inside a bin
 * is solved exactly (a quadratic). Mass the estimate never reaches (running
 * jobs bigger than every finished one) sits at the top of the highest bin
 * any job reached. Pure numbers; no clock, no I/O.
 */
#ifndef XP_GITTINS_H
#define XP_GITTINS_H

#include <stddef.h>

struct xp_gittins {
	int nb;		  /* bins */
	double lo, step;  /* bin i covers [lo 10^(i/step), lo 10^((i+1)/step)), bin 0 from 0 */
	double *fin_n;	  /* finished jobs per bin */
	double *cen_n;	  /* censored (running) jobs per bin, this build */
	double *p;	  /* the estimate: mass per bin */
	double *s;	  /* survival at each bin's lower edge, nb + 1 of them */
	double tail;	  /* mass beyond the last finished size (KM never reached 0), */
	double tail_v;	  /* put at the top of the highest bin any job reached */
	int top;	  /* that bin, -1 when nothing was added */
	size_t nfin, ncen;
};

/* bins from lo to hi (> lo > 0), per_decade of them per factor of 10 */
void xp_gittins_init(struct xp_gittins *g, double lo, double hi, int per_decade);
void xp_gittins_free(struct xp_gittins *g);
/* a job finished with this size */
void xp_gittins_finished(struct xp_gittins *g, double size);
/* forget the running jobs, then add each one's attained service */
void xp_gittins_censor_clear(struct xp_gittins *g);
void xp_gittins_censored(struct xp_gittins *g, double attained);
/* the Kaplan-Meier estimate from what was added */
void xp_gittins_build(struct xp_gittins *g);
/* G(a) under the built estimate; 0 when no mass lies above a */
double xp_gittins_index(const struct xp_gittins *g, double attained);

#endif
