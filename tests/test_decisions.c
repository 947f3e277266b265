/*
 * test_decisions: one tenancy scenario two ways - through a real controller
 * on loopback (HTTP, journal, owner thread) and through the state layer
 * directly, as the simulator drives it (tests/world.c) - must give the same
 * decisions: every job's state, preemptions and allocations (node and
 * devices), step by step.
 *
 * The scenario borrows, reclaims, preempts by priority, places a gang
 * together, meets a max and cancels; on the emulated nodes of
 * examples/clusters/small.yaml, registered in the same order both ways.
 * Jobs have no duration (they run until cancelled or preempted), so the
 * clock plays no part. After each step the controller is given a moment to
 * run its cycle before the next request. XP_DEC_VERBOSE=1 prints the
 * decisions and reasons after each step.
 */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"
#include "core/model/model.h"
#include "descriptor/descriptor.h"
#include "edge/edge.h"
#include "lib/xalloc.h"
#include "server/ctl.h"
#include "world.h"

enum { QUEUE, SUBMIT, CANCEL };

static const struct step {
	int kind;
	const char *doc; /* queue or job spec (JSON); CANCEL: the job id as text */
} steps[] = {
	{ QUEUE, "{\"name\":\"a\",\"quota\":{\"gpu\":{\"guarantee\":\"8\"}}}" },
	{ QUEUE, "{\"name\":\"b\"}" },
	{ QUEUE, "{\"name\":\"p\",\"preempt\":\"priority\",\"quota\":{\"gpu\":{\"max\":\"8\"}}}" },
	/* b borrows the A100s */
	{ SUBMIT, "{\"queue\":\"b\",\"resources\":{\"cpu\":2,\"memory\":\"4Gi\",\"devices\":{"
		  "\"count\":4,\"model\":\"A100-SXM4-80GB\"}}}" },
	{ SUBMIT, "{\"queue\":\"b\",\"resources\":{\"cpu\":2,\"memory\":\"4Gi\",\"devices\":{"
		  "\"count\":4,\"model\":\"A100-SXM4-80GB\"}}}" },
	{ SUBMIT, "{\"queue\":\"b\",\"resources\":{\"cpu\":2,\"memory\":\"4Gi\",\"devices\":{"
		  "\"count\":2,\"model\":\"A100-SXM4-80GB\"}}}" },
	{ SUBMIT, "{\"queue\":\"b\",\"resources\":{\"cpu\":2,\"memory\":\"4Gi\",\"devices\":{"
		  "\"count\":6,\"model\":\"A100-SXM4-80GB\"}}}" },
	/* a reclaims */
	{ SUBMIT, "{\"queue\":\"a\",\"resources\":{\"cpu\":1,\"memory\":\"1Gi\",\"devices\":{"
		  "\"count\":4,\"model\":\"A100-SXM4-80GB\"}}}" },
	/* p: low, then high priority on the H100 node */
	{ SUBMIT, "{\"queue\":\"p\",\"priority\":1,\"resources\":{\"cpu\":1,\"memory\":\"1Gi\","
		  "\"devices\":{\"count\":6,\"model\":\"H100-SXM5-80GB\"}}}" },
	{ SUBMIT, "{\"queue\":\"p\",\"priority\":7,\"resources\":{\"cpu\":1,\"memory\":\"1Gi\","
		  "\"devices\":{\"count\":4,\"model\":\"H100-SXM5-80GB\"}}}" },
	/* p's max (8) with 4 running: this one fits only by preempting that
	 * lower-priority job, which frees quota and GPUs alike */
	{ SUBMIT, "{\"queue\":\"p\",\"priority\":9,\"resources\":{\"cpu\":1,\"memory\":\"1Gi\","
		  "\"devices\":{\"count\":6,\"model\":\"H100-SXM5-80GB\"}}}" },
	/* a gang together on one NPU node */
	{ SUBMIT, "{\"queue\":\"b\",\"replicas\":2,\"gang\":{\"colocate\":\"node\"},\"resources\":"
		  "{\"cpu\":1,\"memory\":\"1Gi\",\"devices\":{\"count\":4,\"class\":\"npu\"}}}" },
	{ SUBMIT, "{\"queue\":\"b\",\"resources\":{\"cpu\":4,\"memory\":\"8Gi\"}}" },
	{ CANCEL, "6" },
	{ SUBMIT, "{\"queue\":\"a\",\"resources\":{\"cpu\":1,\"memory\":\"1Gi\",\"devices\":{"
		  "\"count\":4,\"model\":\"A100-SXM4-80GB\"}}}" },
	{ CANCEL, "1" },
	{ SUBMIT, "{\"queue\":\"b\",\"resources\":{\"cpu\":1,\"memory\":\"1Gi\",\"devices\":{"
		  "\"count\":1,\"class\":\"gpu\"}}}" },
};

/* "job 3: running 1 [gpu-a100-0:0,1,2,3]" per job, one line each */
static char *describe_state(const struct xp_state *st)
{
	json_t *a = json_array();
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		char buf[1024];
		int n = snprintf(buf, sizeof(buf), "job %llu: %s %u [", (unsigned long long)j->id,
				 xp_job_state_name(j->state), j->preemptions);
		for (uint32_t r = 0; j->state == XP_JOB_RUNNING && r < j->spec.replicas; r++) {
			const struct xp_alloc *al = &j->allocs[r];
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s%s:", r ? " " : "",
				      st->c->nodes[al->node].name);
			for (uint16_t d = 0; d < al->ndev; d++)
				n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s%u",
					      d ? "," : "", al->devs[d]);
		}
		snprintf(buf + n, sizeof(buf) - (size_t)n, "]");
		json_array_append_new(a, json_string(buf));
	}
	char *s = json_dumps(a, JSON_INDENT(1));
	json_decref(a);
	return s;
}

static char *describe_api(struct xp_client *cl)
{
	json_t *reply = NULL, *a = json_array(), *j;
	struct xp_err err = { 0 };
	size_t i;
	if (xp_client_json(cl, "GET", "/v1/jobs?limit=1000", NULL, &reply, &err) < 0)
		fail_msg("list: %s", err.text);
	json_array_foreach(json_object_get(reply, "jobs"), i, j)
	{
		char buf[1024];
		const char *state = json_string_value(json_object_get(j, "state"));
		int n = snprintf(buf, sizeof(buf), "job %lld: %s %lld [",
				 (long long)json_integer_value(json_object_get(j, "id")), state,
				 (long long)json_integer_value(json_object_get(j, "preemptions")));
		json_t *al;
		size_t r;
		json_array_foreach(json_object_get(j, "allocations"), r, al)
		{
			if (strcmp(state, "running"))
				break;
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s%s:", r ? " " : "",
				      json_string_value(json_object_get(al, "node")));
			json_t *dv;
			size_t d;
			json_array_foreach(json_object_get(al, "devices"), d, dv) n += snprintf(
				buf + n, sizeof(buf) - (size_t)n, "%s%lld", d ? "," : "",
				(long long)json_integer_value(json_object_get(dv, "index")));
		}
		snprintf(buf + n, sizeof(buf) - (size_t)n, "]");
		json_array_append_new(a, json_string(buf));
	}
	json_decref(reply);
	char *s = json_dumps(a, JSON_INDENT(1));
	json_decref(a);
	return s;
}

static void direct_setup(struct world *w, const char *cluster)
{
	struct xp_err err = { 0 };
	world_init(w);
	assert_int_equal(world_apply(w, "tenant.create", xp_rec_tenant_create("admin")), 0);
	assert_int_equal(world_apply(w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
	struct xp_cluster *c = xp_descriptor_load_file(cluster, &err);
	assert_non_null(c);
	for (size_t i = 0; i < c->nnodes; i++) { /* as the controller registers them */
		struct xp_cluster *one = xp_cluster_create();
		xp_cluster_copy_node(one, c, &c->nodes[i], NULL);
		char *d = xp_descriptor_to_json(one);
		xp_cluster_destroy(one);
		assert_int_equal(world_apply(w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, d)),
				 0);
		free(d);
	}
	xp_cluster_destroy(c);
	world_cycle(w);
}

static void direct_step(struct world *w, const struct step *s)
{
	struct xp_err err = { 0 };
	if (s->kind == QUEUE) {
		struct xp_queuespec q;
		assert_int_equal(
			xp_queuespec_parse_text("q", s->doc, strlen(s->doc), 1, 1, &q, NULL, &err),
			0);
		assert_int_equal(world_apply(w, "queue.create", xp_rec_queue_define(&q)), 0);
	} else if (s->kind == SUBMIT) {
		struct xp_jobspec sp;
		assert_int_equal(
			xp_jobspec_parse_text("j", s->doc, strlen(s->doc), 1, &sp, NULL, &err), 0);
		assert_int_equal(
			world_apply(w, "job.submit",
				    xp_rec_job_submit(w->st->next_job_id, "admin", NULL, &sp)),
			0);
		xp_jobspec_free(&sp);
	} else {
		assert_int_equal(world_apply(w, "job.cancel",
					     xp_rec_job_cancel(strtoull(s->doc, NULL, 10),
							       "cancelled by request")),
				 0);
	}
	world_cycle(w);
}

static void api_step(struct xp_client *cl, const struct step *s)
{
	struct xp_err err = { 0 };
	json_t *reply = NULL;
	json_error_t je;
	char path[64];
	json_t *body = s->kind == CANCEL ? NULL : json_loads(s->doc, 0, &je);
	snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", s->doc);
	int rc = xp_client_json(cl, "POST",
				s->kind == QUEUE    ? "/v1/queues"
				: s->kind == SUBMIT ? "/v1/jobs"
						    : path,
				body, &reply, &err);
	if (rc < 0)
		fail_msg("%s: %s", s->doc, err.text);
	json_decref(body);
	json_decref(reply);
	usleep(30000); /* the owner runs its cycle right after the command */
}

static void test_same_decisions(void **state)
{
	(void)state;
	char dir[] = "/tmp/xpdecXXXXXX", cluster[4096];
	struct xp_ctl_opts o = { 0 };
	struct xp_ctl *ctl;
	struct xp_err err = { 0 };
	struct world w;

	snprintf(cluster, sizeof(cluster), "%s/examples/clusters/small.yaml", XP_SOURCE_DIR);
	assert_non_null(mkdtemp(dir));
	o.data = dir;
	o.listen = "127.0.0.1:0";
	o.cluster = cluster;
	o.sync = 1;
	o.body_limit = 1 << 20;
	if (xp_ctl_start(&o, &ctl, &err) < 0)
		fail_msg("start: %s", err.text);
	struct xp_client *cl = xp_client_create(ctl->addr, ctl->admin_token, &err);
	assert_non_null(cl);
	direct_setup(&w, cluster);
	int preempted = 0;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		api_step(cl, &steps[i]);
		direct_step(&w, &steps[i]);
		char *a = describe_api(cl), *d = describe_state(w.st);
		if (strcmp(a, d))
			fail_msg("step %zu (%s): the controller decided\n%s\nthe state layer\n%s",
				 i, steps[i].doc, a, d);
		preempted |= strstr(d, "pending 1") != NULL;
		if (getenv("XP_DEC_VERBOSE")) {
			print_message("after step %zu:\n%s\n", i, d);
			for (size_t k = 0; k < w.st->jobs.n; k++)
				if (w.st->jobs.v[k]->reason)
					print_message("  job %llu: %s\n",
						      (unsigned long long)w.st->jobs.v[k]->id,
						      w.st->jobs.v[k]->reason);
		}
		free(a);
		free(d);
	}
	assert_true(preempted); /* the scenario did exercise preemption */
	xp_client_destroy(cl);
	world_free(&w);
	xp_ctl_stop(ctl);
	xp_test_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_decisions),
	};
	return xp_run_tests(tests, NULL, NULL);
}
