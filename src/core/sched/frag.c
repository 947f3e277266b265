/*
 * frag: the GPU fragmentation measure of the FGD paper (Weng et al., ATC'23),
 * generalised to any accelerator and selector.
 *
 * For a target workload M of shapes m with probabilities p_m, node n's
 * fragmentation is F_n(M) = sum_m p_m * F_n(m), where, with L_n the free
 * milli of the node's healthy accelerators:
 *   - m asks for no device, or the node lacks m's CPU:  F_n(m) = L_n;
 *   - fewer than k_m devices both match m's selector and have room for one
 *     slot of m:                                          F_n(m) = L_n;
 *   - otherwise F_n(m) = the free milli of devices that cannot take a slot
 *     of m (too little room, or not matching the selector).
 * On a node whose devices are all one model this is exactly the reference
 * simulator's definition (PROTOCOL.md 2.2): "no access" when the model is
 * not allowed, and only GPUs with l < u counting when the node can host m.
 * Host memory is not part of the measure, as in the reference.
 */
#include "sched_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"

/* Devices of mask that can take one slot of r (the rest add their free
 * milli to *small); kind 0: any request, 1: a whole device of a mode that
 * takes one, 2: a fraction, not sized by memory, of a mode that takes one.
 * Inlined with a constant kind: the hot loop of xpool and FGD scores. */
static inline __attribute__((always_inline)) int
count_fits(const struct xp_dstate *dv, const uint16_t *fm, const uint64_t *fmem,
	   const struct xp_request *r, uint64_t mask, int kind, double *small)
{
	int cnt = 0;
	uint64_t dm = r->dev_mem_mib;
	uint16_t milli = r->dev_milli;
	while (mask) {
		int d = __builtin_ctzll(mask), fits;
		mask &= mask - 1;
		if (kind == 0)
			fits = xp_dev_fits_as(&dv[d], fm[d], fmem[d], r);
		else if (kind == 1)
			fits = fm[d] == XP_MILLI && fmem[d] == dv[d].mem && dm <= dv[d].phys;
		else
			fits = fm[d] >= milli && fmem[d] >= dm && dm <= dv[d].phys;
		if (fits)
			cnt++;
		else
			*small += fm[d];
	}
	return cnt;
}

double xp_frag_eval(const struct xp_sched *s, uint32_t n, int64_t cpu_free,
		    const uint16_t *free_milli, const uint64_t *free_mem)
{
	const struct xp_nstate *ns = &s->ns[n];
	const struct xp_dstate *dv = &s->dev[ns->dev0];
	uint16_t fm[XP_MAX_NODE_DEVS];
	uint64_t fmem[XP_MAX_NODE_DEVS];
	uint64_t live = 0; /* healthy accelerators */
	uint64_t by_mode[2] = { 0, 0 }; /* [whole]: those that may take a fraction, a whole slot
					 * (only when some device's mode is not shared) */
	double L = 0, acc = 0;
	const int modes = s->modes;

	if (cpu_free < 0)
		cpu_free = ns->cpu_free;
	for (uint16_t d = 0; d < ns->ndev; d++) {
		fm[d] = free_milli ? free_milli[d] : dv[d].free_milli;
		fmem[d] = free_mem ? free_mem[d] : dv[d].free_mem;
		if (dv[d].ok && dv[d].accel) {
			live |= 1ULL << d;
			L += fm[d];
		}
		if (modes) {
			by_mode[0] |= (uint64_t)(dv[d].mode == XP_MODE_SHARED ||
						 dv[d].mode == XP_MODE_TIMESLICE)
				      << d;
			by_mode[1] |= (uint64_t)(dv[d].mode != XP_MODE_MIG) << d;
		}
	}
	for (size_t i = 0; i < s->nm; i++) {
		const struct xp_shape *m = &s->m[i];
		const struct xp_request *r = &m->req;
		if (r->dev_count == 0 || cpu_free < (int64_t)r->cpu_milli) {
			acc += m->p * L;
			continue;
		}
		uint64_t mask = m->tmask[ns->type] & live;
		int cnt = 0;
		double small = 0;
		/* xp_dev_fits_as, with the mode (a device whose mode refuses the
		 * slot counts as small, as one without room does) and the milli
		 * taken out of the loop unless the share is sized by memory */
		if (modes && m->fitk)
			mask &= by_mode[m->fitk == 1];
		uint64_t rest = live & ~mask;
		if (m->fitk == 1)
			cnt = count_fits(dv, fm, fmem, r, mask, 1, &small);
		else if (m->fitk == 2)
			cnt = count_fits(dv, fm, fmem, r, mask, 2, &small);
		else
			cnt = count_fits(dv, fm, fmem, r, mask, 0, &small);
		if (cnt < r->dev_count) {
			acc += m->p * L;
			continue;
		}
		while (rest) {
			int d = __builtin_ctzll(rest);
			rest &= rest - 1;
			small += fm[d];
		}
		acc += m->p * small;
	}
	return acc;
}

/* The summaries of M that the xpool policy reads (policy_fgd.c,
 * sched_int.h). */
static void workload_summary(struct xp_sched *s)
{
	double cpu = 0, milli = 0, total = 0;
	double *supply = xcalloc(s->ntypes + 1, sizeof(double));

	free(s->type_pressure);
	s->type_pressure = xcalloc(s->ntypes + 1, sizeof(double));
	for (uint32_t n = 0; n < s->nnodes; n++)
		if (s->ns[n].up) /* a node down (or removed) supplies nothing */
			supply[s->ns[n].type] += s->ns[n].cap_milli;
	for (uint32_t t = 0; t < s->ntypes; t++)
		total += supply[t];
	for (size_t i = 0; i < s->nm; i++) {
		const struct xp_request *r = &s->m[i].req;
		if (r->dev_count == 0)
			continue;
		cpu += s->m[i].p * (double)r->cpu_milli;
		milli += s->m[i].p * (double)r->dev_count * r->dev_milli;
	}
	s->m_cpu_per_milli = milli > 0 ? cpu / milli : 0;
	for (size_t i = 0; i < s->nm && milli > 0; i++) {
		const struct xp_shape *m = &s->m[i];
		double sup = 0;
		if (m->req.dev_count == 0)
			continue;
		for (uint32_t t = 0; t < s->ntypes; t++)
			if (m->tmask[t])
				sup += supply[t];
		if (sup <= 0 || sup >= total) /* unconstrained, or nowhere to go */
			continue;
		double share = m->p * m->req.dev_count * m->req.dev_milli / milli;
		for (uint32_t t = 0; t < s->ntypes; t++)
			if (m->tmask[t])
				s->type_pressure[t] += share * total / sup;
	}
	free(supply);
}

int xp_sched_set_workload(struct xp_sched *s, const struct xp_wshape *m, size_t n,
			  struct xp_err *err)
{
	double sum = 0;

	for (size_t i = 0; i < n; i++) {
		int rc = xp_request_check(&m[i].req, err);
		if (rc < 0) {
			xp_err_prefix(err, "workload shape %zu: ", i);
			return rc;
		}
		if (!(m[i].p >= 0) || !isfinite(m[i].p))
			return xp_errf(err, XP_EINVAL, "workload shape %zu: probability %g", i,
				       m[i].p);
		sum += m[i].p;
	}
	if (n && fabs(sum - 1) > 1e-3)
		return xp_errf(err, XP_EINVAL, "workload probabilities sum to %g, not 1", sum);

	for (size_t i = 0; i < s->nm; i++)
		xp_shape_free(&s->m[i]);
	free(s->m);
	s->m = n ? XNEWV(struct xp_shape, n) : NULL;
	s->nm = n;
	for (size_t i = 0; i < n; i++) {
		xp_shape_init(s, &s->m[i], &m[i].req);
		s->m[i].p = m[i].p;
	}
	workload_summary(s);
	s->frag_total = 0;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		memset(s->ns[i].fkey, 0, sizeof(s->ns[i].fkey)); /* memos of the old M */
		s->ns[i].frag = n ? xp_frag_eval(s, i, -1, NULL, NULL) : 0;
		s->frag_total += s->ns[i].frag;
	}
	if (s->idx)
		xp_index_reset(s);
	return 0;
}
