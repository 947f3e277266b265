/*
 * limits: jobs due to be stopped by the clock - running past their
 * time_limit, or pending past their gang.timeout (counted from submission;
 * a job held by its dependencies is not timed). The controller and the
 * simulator ask with their own clock and journal job.finish (failed) with
 * the reason; the state has no clock of its own. A time limit ends the job
 * with end reason time_limit: the controller's emulated nodes report
 * SIGTERM (143) at once, an agent's kill report brings the real exit code
 * and signal afterwards (docs/design/agent.md "Time limits").
 */
#include "state_int.h"

#include <stdio.h>
#include <string.h>

#include "../../lib/strbuf.h"
#include "../../lib/timefmt.h"

size_t xp_state_overdue(struct xp_state *st, int64_t now, struct xp_overdue *out, size_t max)
{
	size_t n = 0;
	char d[32];
	for (size_t i = 0; i < st->jobs.n && n < max; i++) {
		struct xp_job *j = st->jobs.v[i];
		if (j->state == XP_JOB_RUNNING && j->spec.time_limit_ms &&
		    now >= j->started_at + j->spec.time_limit_ms) {
			xp_duration_short(j->spec.time_limit_ms, d, sizeof(d));
			out[n].id = j->id;
			out[n].time_limit = 1;
			snprintf(out[n++].why, sizeof(out->why), "time limit %s exceeded", d);
		} else if (j->state == XP_JOB_PENDING && j->spec.gang_timeout_ms && !j->unmet &&
			   !j->doomed && now >= j->submitted_at + j->spec.gang_timeout_ms) {
			struct xp_explain ex;
			struct xp_sb sb;
			int fits;
			xp_state_explain(st, j, &ex, &fits);
			if (fits)
				continue; /* the next cycle places it */
			xp_sb_init(&sb);
			xp_explain_summary(&ex, fits, j->spec.replicas, &sb);
			xp_duration_short(j->spec.gang_timeout_ms, d, sizeof(d));
			out[n].id = j->id;
			out[n].time_limit = 0;
			snprintf(out[n++].why, sizeof(out->why), "not placed within %s: %s", d,
				 sb.s);
			xp_sb_free(&sb);
		}
	}
	return n;
}
