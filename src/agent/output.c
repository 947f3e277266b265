/*
 * output: HA - a task's output sent again to a new leader (see agent.h).
 *
 * Agents upload output to the controller that leads; with `--store etcd`
 * each controller keeps what it was sent in its own DATA/logs, so a leader
 * that takes over lacks the output the old one took. A running task's
 * output heals by itself (the new leader answers an upload at offset N with
 * "have": 0, and the agent sends from 0), but a task that ended before the
 * failover is not uploaded again - except here: when the heartbeats meet a
 * higher epoch, every task folder whose "reported" file is younger than
 * o.output_resend_s sends both streams from offset 0. The controller skips
 * the bytes it holds, so a repeat keeps nothing twice, and refuses (4xx,
 * dropped) output of jobs it no longer knows.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "agent.h"

void xp_output_resend(struct xp_agent *a, struct xp_client *cl)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/tasks", a->o.work);
	DIR *d = opendir(path);
	if (!d)
		return;
	time_t since = time(NULL) - a->o.output_resend_s;
	unsigned sent = 0, failed = 0;
	struct dirent *e;
	while ((e = readdir(d)) && !atomic_load(&a->stop)) {
		unsigned long long job;
		unsigned replica, attempt, epoch = 0;
		if (sscanf(e->d_name, "%llu-%u-%u-e%u", &job, &replica, &attempt, &epoch) < 3)
			continue;
		struct xp_task t;
		char done[1200];
		struct stat st;
		memset(&t, 0, sizeof(t));
		if ((size_t)snprintf(t.dir, sizeof(t.dir), "%s/%s", path, e->d_name) >= sizeof(t.dir))
			continue;
		snprintf(done, sizeof(done), "%s/reported", t.dir);
		if (stat(done, &st) != 0 || st.st_mtime < since)
			continue; /* running (its own uploads heal it), or older than the window */
		t.job = job;
		t.replica = replica;
		t.attempt = attempt;
		t.epoch = epoch;
		t.state = XP_TASK_DONE;
		if (xp_agent_upload_output(a, cl, &t) == 0)
			sent++;
		else
			failed++;
	}
	closedir(d);
	fprintf(stderr,
		"xpool agent: node=%s: a new leader (epoch %lld): the output of %u ended task%s "
		"sent again%s\n",
		a->node, (long long)atomic_load(&a->leader_epoch), sent, sent == 1 ? "" : "s",
		failed ? " (some failed: they go with the next leader change)" : "");
}
