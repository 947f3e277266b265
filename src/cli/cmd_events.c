/*
 * cmd_events: `xpool events` - the controller's event log (docs/api.md,
 * "Events"): job, node, queue, tenant and token changes, in sequence order.
 *
 * Without --follow: one long poll (GET /v1/events?since=S&wait=W); unless
 * --limit caps it, later pages are fetched (wait 0) until the log is caught
 * up, and all of it prints as one table.
 *
 * With --follow: a server-sent event stream, one line per event as it
 * happens (-o json: one compact JSON object per line). When the stream
 * ends or breaks it reconnects with Last-Event-ID, so no event is lost or
 * repeated. A quiet stream that the controller closes is simply reopened;
 * an unreachable controller is retried 5 times a second apart (a restart),
 * and is an error at once when the first connection fails. A controller
 * that answers without an event stream is followed by long polling.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../client/client.h"
#include "../lib/strbuf.h"
#include "../lib/xalloc.h"
#include "cli.h"
#include "flags.h"
#include "table.h"

#define MAX_CATCHUP_PAGES 1000
#define FOLLOW_RETRIES	  5
#define POLL_WAIT_S	  "30"

/* "job/17", "node/gpu-a100-0", ...: the object an event is about, named by
 * its type's first word; *used is the member that named it. */
static char *object_text(const json_t *ev, const char **used)
{
	const char *type = xp_cli_jstr(ev, "type");
	struct xp_sb b = { 0 };
	char kind[32];
	size_t kl = type ? strcspn(type, ".") : 0;

	*used = NULL;
	if (!kl || kl >= sizeof(kind))
		return NULL;
	memcpy(kind, type, kl);
	kind[kl] = '\0';
	static const char *const keys[] = { NULL, "name", "id", NULL };
	for (int i = 0; i < 3; i++) {
		const char *k = i == 0 ? kind : keys[i];
		char *v = xp_cli_jtext(json_object_get(ev, k));
		if (v) {
			xp_sb_printf(&b, "%s/%s", kind, v);
			free(v);
			*used = i == 0 ? type : k; /* type: the kind member */
			return xp_sb_steal(&b);
		}
	}
	return NULL;
}

/* The remaining members as "k=v k=v". */
static char *detail_text(const json_t *ev, const char *used)
{
	const char *type = xp_cli_jstr(ev, "type");
	size_t kl = type ? strcspn(type, ".") : 0;
	struct xp_sb b = { 0 };
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)ev, k, v)
	{
		if (!strcmp(k, "seq") || !strcmp(k, "at") || !strcmp(k, "type"))
			continue;
		if (used && ((used == type && strlen(k) == kl && !strncmp(k, type, kl)) ||
			     (used != type && !strcmp(k, used))))
			continue;
		char *s = xp_cli_jtext(v);
		if (s)
			xp_sb_printf(&b, "%s%s=%s", b.len ? " " : "", k, s);
		free(s);
	}
	return b.len ? xp_sb_steal(&b) : (xp_sb_free(&b), NULL);
}

struct ev_text {
	char *seq, *at, *type, *obj, *det; /* malloc'd, any may be NULL */
};

static void ev_text(const json_t *ev, struct ev_text *t)
{
	const char *used;
	t->seq = xp_cli_jtext(json_object_get(ev, "seq"));
	t->at = xp_cli_jtext(json_object_get(ev, "at"));
	t->type = xp_cli_jtext(json_object_get(ev, "type"));
	t->obj = object_text(ev, &used);
	t->det = detail_text(ev, used);
}

static void ev_text_free(struct ev_text *t)
{
	free(t->seq);
	free(t->at);
	free(t->type);
	free(t->obj);
	free(t->det);
}

static void event_cells(struct xp_table *t, const json_t *ev)
{
	struct ev_text e;
	ev_text(ev, &e);
	xp_table_add(t, e.seq);
	xp_table_add(t, e.at);
	xp_table_add(t, e.type);
	xp_table_add(t, e.obj);
	xp_table_add(t, e.det);
	ev_text_free(&e);
}

static const char *const event_hdr[] = { "SEQ", "AT", "TYPE", "OBJECT", "DETAILS", NULL };

#define FOLLOW_FMT "%-6s  %-24s  %-15s  %-20s  %s\n"

/* Control characters out, "-" for nothing: the table's rule, for one line. */
static const char *tidy(char *s)
{
	if (!s || !*s)
		return "-";
	for (unsigned char *p = (unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
	return s;
}

struct follow {
	int json, got;
	long long seq;
	int have_seq;
	int header; /* the header line is out */
};

/* One event as a line while following (no table: rows arrive one by one). */
static void follow_line(const json_t *ev, struct follow *f)
{
	if (f->json) {
		char *s = json_dumps(ev, JSON_COMPACT);
		if (s)
			puts(s);
		free(s);
	} else {
		struct ev_text e;
		if (!f->header)
			printf(FOLLOW_FMT, "SEQ", "AT", "TYPE", "OBJECT", "DETAILS");
		f->header = 1;
		ev_text(ev, &e);
		printf(FOLLOW_FMT, tidy(e.seq), tidy(e.at), tidy(e.type), tidy(e.obj), tidy(e.det));
		ev_text_free(&e);
	}
	fflush(stdout);
}

static int on_event(void *ud, const struct xp_sse_event *e)
{
	struct follow *f = ud;
	json_t *ev = json_loadb(e->data, e->data_len, 0, NULL);
	long long seq;
	if (!json_is_object(ev)) {
		json_decref(ev);
		return 0; /* a keep-alive or an event we cannot read: skip it */
	}
	if (xp_cli_jint(ev, "seq", &seq) == 0) {
		f->seq = seq;
		f->have_seq = 1;
	}
	f->got = 1;
	follow_line(ev, f);
	json_decref(ev);
	return 0;
}

static void events_path(struct xp_sb *p, const char *since, const char *wait, const char *limit)
{
	xp_sb_reset(p);
	xp_sb_puts(p, "/v1/events");
	if (since && *since)
		xp_client_query(p, "since", since);
	if (wait)
		xp_client_query(p, "wait", wait);
	if (limit)
		xp_client_query(p, "limit", limit);
}

/* Follow by long polling, for a controller that does not stream. */
static int poll_forever(struct xp_cli *x, struct follow *f, const char *since)
{
	struct xp_sb p = { 0 };
	char *cur = since ? xstrdup(since) : NULL;
	xp_client_set_timeout(x->client, 30000 + 30000);
	for (;;) {
		json_t *reply = NULL, *ev;
		size_t i;
		events_path(&p, cur, POLL_WAIT_S, NULL);
		if (xp_cli_call(x, "GET", p.s, NULL, &reply) < 0) {
			xp_sb_free(&p);
			free(cur);
			return xp_cli_fail_api(x);
		}
		json_array_foreach(json_object_get(reply, "events"), i, ev) follow_line(ev, f);
		char *next = xp_cli_jtext(json_object_get(reply, "next"));
		if (next) {
			free(cur);
			cur = next;
		}
		json_decref(reply);
	}
}

static int follow(struct xp_cli *x, const char *since)
{
	struct follow f = { x->json, 0, 0, 0, 0 };
	struct xp_sb p = { 0 };
	char last[XP_SSE_ID_MAX] = "";
	int failures = 0, status = 1, connected = 0;

	if (since)
		snprintf(last, sizeof(last), "%s", since);
	for (;;) {
		f.got = 0;
		events_path(&p, last, NULL, NULL);
		int rc = xp_client_stream(x->client, p.s, last, on_event, &f, &x->err);
		if (rc == XP_EUNSUPP) {
			status = poll_forever(x, &f, last[0] ? last : NULL);
			break;
		}
		if (rc == 0 || rc == XP_EIO || f.got) {
			/* the stream worked, then ended or broke: resume at once */
			connected = 1;
			failures = 0;
		} else if (rc == XP_EUNAVAIL && connected && ++failures <= FOLLOW_RETRIES) {
			/* the controller went away (a restart?): try again */
		} else {
			status = xp_cli_fail_api(x);
			break;
		}
		if (!last[0] && f.have_seq)
			snprintf(last, sizeof(last), "%lld", f.seq);
		sleep(1);
	}
	xp_sb_free(&p);
	return status;
}

int xp_verb_events(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "since", XP_FLAG_STR, "SEQ", "only events after this sequence number" },
		{ "wait", XP_FLAG_STR, "SECONDS",
		  "wait up to 0..60 s for a first event (default 0)" },
		{ "limit", XP_FLAG_STR, "N", "at most N events, 1..1000 (default: all)" },
		{ "follow", XP_FLAG_BOOL, NULL, "keep printing events as they happen", 'f' },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb verb = {
		"events",
		"xpool events [--since SEQ] [--wait SECONDS] [--limit N] [--follow]",
		"Print the controller's events in order: job, node, queue, tenant and token\n"
		"changes. A tenant sees its own jobs' events and those of nodes and queues.",
		NULL,
		0,
		0,
	};
	struct xp_cli x;
	struct xp_sb path = { 0 };
	json_t *all = NULL;
	long v;
	int status = 2;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	const char *since = xp_flag_get(flags, "since")->sval;
	const char *wait = xp_flag_get(flags, "wait")->sval;
	const char *limit = xp_flag_get(flags, "limit")->sval;
	int following = xp_flag_get(flags, "follow")->given;
	if ((since && xp_parse_int_flag("since", since, 0, LONG_MAX, &v, &x.err) < 0) ||
	    (wait && xp_parse_int_flag("wait", wait, 0, 60, &v, &x.err) < 0) ||
	    (limit && xp_parse_int_flag("limit", limit, 1, 1000, &v, &x.err) < 0)) {
		xp_cli_fail(verb.verb, &x.err, 2);
		goto out;
	}
	if (following && (wait || limit)) {
		xp_cli_errorf(&x, 2, "--follow waits by itself: drop --%s",
			      wait ? "wait" : "limit");
		goto out;
	}
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	if (following) {
		status = follow(&x, since);
		goto out;
	}
	status = 1;
	if (wait)
		xp_client_set_timeout(x.client, (atol(wait) + 30) * 1000);
	char *cur = since ? xstrdup(since) : NULL;
	for (int page = 0; page < MAX_CATCHUP_PAGES; page++) {
		json_t *reply = NULL;
		events_path(&path, cur, page == 0 ? wait : NULL, limit);
		if (xp_cli_call(&x, "GET", path.s, NULL, &reply) < 0) {
			xp_cli_fail_api(&x);
			free(cur);
			goto out;
		}
		json_t *evs = json_object_get(reply, "events");
		if (!json_is_array(evs)) {
			json_decref(reply);
			free(cur);
			xp_cli_errorf(&x, 1, "the controller's reply has no \"events\" list");
			goto out;
		}
		size_t got = json_array_size(evs); /* evs dies with reply below */
		if (!all) {
			all = reply;
		} else {
			json_array_extend(json_object_get(all, "events"), evs);
			json_object_set(all, "next", json_object_get(reply, "next"));
			json_decref(reply);
		}
		char *next = xp_cli_jtext(json_object_get(all, "next"));
		int done = limit || !got || !next || (cur && !strcmp(cur, next));
		free(cur);
		cur = next;
		if (done)
			break;
	}
	free(cur);
	if (x.json) {
		xp_cli_print_json(all);
	} else {
		struct xp_table *t = xp_table_create(event_hdr);
		json_t *ev;
		size_t i;
		json_array_foreach(json_object_get(all, "events"), i, ev) event_cells(t, ev);
		if (xp_table_rows(t))
			xp_table_print(t, stdout);
		else
			printf("no events\n");
		xp_table_destroy(t);
	}
	status = 0;
out:
	xp_sb_free(&path);
	json_decref(all);
	return xp_cli_end(&x, status);
}
