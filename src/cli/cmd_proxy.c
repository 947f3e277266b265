/*
 * cmd_proxy: services behind a real HAProxy (docs/design/serving.md
 * "Proxy").
 *
 *   xpool service proxy-config  an haproxy.cfg: per service with a port, a
 *       frontend on that port and a backend of --slots server-template
 *       slots (r1..rN, in maintenance until filled), retries on another
 *       server when a connection fails (retry-on conn-failure, redispatch),
 *       and the runtime API socket;
 *   xpool service proxy-sync    the loop that keeps a running HAProxy's
 *       slots equal to the services' endpoints through that socket, so
 *       nothing reloads and no request is dropped: a new endpoint takes a
 *       free slot (set server addr/port, state ready); a gone one is set
 *       to drain - it takes no new requests - and to maintenance once its
 *       connections are done (scur 0, or after --drain-max).
 *
 * The controller keeps a replica that is scaled down out of the endpoints
 * for the service's drain time before stopping it, so the proxy lets it go
 * first; a replica that dies anyway costs a retry, not a failed request.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "../client/client.h"
#include "../lib/parse.h"
#include "../lib/strbuf.h"
#include "../lib/timefmt.h"
#include "cli.h"
#include "flags.h"

#define SLOTS_DEFAULT 16
#define SLOTS_MAX     1024

/* the services a proxy serves: the named ones, or every one with a port */
static int proxied(struct xp_cli *x, json_t **out)
{
	json_t *reply = NULL, *s;
	size_t i;
	if (xp_cli_call(x, "GET", "/v1/services", NULL, &reply) < 0)
		return -1;
	json_t *keep = json_array();
	json_array_foreach(json_object_get(reply, "services"), i, s)
	{
		long long port = 0;
		const char *name = xp_cli_jstr(s, "name");
		int named = x->nargs == 0;
		for (int k = 0; k < x->nargs && name; k++)
			named |= !strcmp(x->args[k], name);
		if (name && named && xp_cli_jint(json_object_get(s, "spec"), "port", &port) == 0 &&
		    port > 0)
			json_array_append_new(keep, json_pack("{s:s,s:I}", "name", name, "port",
							      (json_int_t)port));
	}
	json_decref(reply);
	*out = keep;
	return 0;
}

int xp_verb_proxy_config(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"service proxy-config",
		"xpool service proxy-config [NAME...] [--format haproxy] [--slots N] [--socket "
		"PATH] [--bind ADDR]",
		"Print an HAProxy configuration for the services (all with a port, or those "
		"named): a frontend on each service's port, a backend of --slots empty server "
		"slots that `xpool service proxy-sync` fills through the runtime API socket.",
		"NAME",
		0,
		-1,
	};
	struct xp_flag flags[] = {
		{ "format", XP_FLAG_STR, "FORMAT", "haproxy (the one there is)" },
		{ "slots", XP_FLAG_STR, "N", "server slots per service (default 16): its most replicas" },
		{ "socket", XP_FLAG_STR, "PATH", "the runtime API socket (default /run/haproxy/xpool.sock)" },
		{ "bind", XP_FLAG_STR, "ADDR", "the address the frontends listen on (default *)" },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	struct xp_cli x;
	json_t *svcs = NULL, *s;
	size_t i;
	int64_t slots = SLOTS_DEFAULT;
	int status = 2;
	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	const struct xp_flag *f = xp_flag_get(flags, "format");
	if (f->given && strcmp(f->sval, "haproxy")) {
		xp_cli_errorf(&x, 2, "--format: expected haproxy, got '%s'", f->sval);
		goto out;
	}
	f = xp_flag_get(flags, "slots");
	if (f->given && xp_parse_i64(f->sval, 1, SLOTS_MAX, &slots) < 0) {
		xp_cli_errorf(&x, 2, "--slots: expected 1..%d, got '%s'", SLOTS_MAX, f->sval);
		goto out;
	}
	const char *sock = xp_flag_get(flags, "socket")->given ? xp_flag_get(flags, "socket")->sval
							       : "/run/haproxy/xpool.sock";
	const char *bind = xp_flag_get(flags, "bind")->given ? xp_flag_get(flags, "bind")->sval : "*";
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	if (proxied(&x, &svcs) < 0) {
		status = xp_cli_fail_api(&x);
		goto out;
	}
	printf("# made by xpool service proxy-config; servers are filled by xpool service "
	       "proxy-sync\n"
	       "global\n    stats socket %s mode 600 level admin\n    maxconn 4096\n\n"
	       "defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n"
	       "    timeout server 60s\n    retries 3\n    option redispatch 1\n"
	       "    retry-on conn-failure empty-response response-timeout\n",
	       sock);
	json_array_foreach(svcs, i, s)
	{
		const char *n = xp_cli_jstr(s, "name");
		long long port = 0;
		xp_cli_jint(s, "port", &port);
		printf("\nfrontend svc_%s\n    bind %s:%lld\n    default_backend svc_%s\n", n, bind,
		       port, n);
		printf("\nbackend svc_%s\n    balance roundrobin\n"
		       "    server-template r 1-%lld 127.0.0.1:1 disabled\n",
		       n, (long long)slots);
	}
	status = 0;
out:
	json_decref(svcs);
	return xp_cli_end(&x, status);
}

/* ---- the runtime API ---- */

/* One command on the socket; its answer (malloc'd) or NULL with err set. */
static char *hap(const char *sock, const char *cmd, struct xp_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(sock) >= sizeof(sa.sun_path)) {
		xp_errf(err, XP_EINVAL, "%s: path too long for a socket", sock);
		return NULL;
	}
	strcpy(sa.sun_path, sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		xp_errf(err, XP_EUNAVAIL, "HAProxy's socket %s: %s", sock, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	struct xp_sb sb = { 0 };
	xp_sb_printf(&sb, "%s\n", cmd);
	int ok = write(fd, sb.s, sb.len) == (ssize_t)sb.len;
	sb.len = 0;
	char buf[4096];
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (!ok || poll(&p, 1, 5000) != 1) {
			ok = 0;
			break;
		}
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r <= 0)
			break;
		xp_sb_putn(&sb, buf, (size_t)r);
	}
	close(fd);
	if (!ok) {
		xp_sb_free(&sb);
		xp_errf(err, XP_EIO, "HAProxy did not answer '%s'", cmd);
		return NULL;
	}
	if (!sb.s)
		xp_sb_puts(&sb, "");
	return sb.s;
}

struct slot {
	char addr[64];
	int port;	/* 0: free */
	int weight;	/* as last set; 0: not set by us */
	int draining;	/* set to drain at */
	long long since; /* ms */
};

struct backend {
	char name[80];
	int n;
	struct slot *s;
};

/* The index of a header's column in "# a b c" (sep ' ') or "# a,b,c" */
static int column(const char *header, const char *name, char sep)
{
	int i = 0;
	const char *p = header + 2;
	size_t nl = strlen(name);
	while (*p && *p != '\n') {
		size_t l = strcspn(p, sep == ' ' ? " \n" : ",\n");
		if (l == nl && !strncmp(p, name, nl))
			return i;
		p += l;
		if (*p == sep)
			p++;
		i++;
	}
	return -1;
}

/* field k of a line split by sep, into out */
static void field(const char *line, int k, char sep, char *out, size_t len)
{
	const char *p = line;
	for (int i = 0; i < k && *p && *p != '\n'; i++) {
		p += strcspn(p, sep == ' ' ? " \n" : ",\n");
		if (*p == sep)
			p++;
	}
	size_t l = strcspn(p, sep == ' ' ? " \n" : ",\n");
	snprintf(out, len, "%.*s", (int)l, p);
}

/* The slots as HAProxy has them now: a slot in maintenance is free. */
static int load_slots(const char *sock, struct backend *b, struct xp_err *err)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "show servers state %s", b->name);
	char *out = hap(sock, cmd, err);
	if (!out)
		return -1;
	const char *hdr = strstr(out, "# be_id");
	int cn = hdr ? column(hdr, "srv_name", ' ') : -1, ca = hdr ? column(hdr, "srv_addr", ' ') : -1,
	    cs = hdr ? column(hdr, "srv_admin_state", ' ') : -1,
	    cp = hdr ? column(hdr, "srv_port", ' ') : -1;
	if (cn < 0 || ca < 0 || cs < 0 || cp < 0) {
		xp_errf(err, XP_EIO, "backend %s: HAProxy's server state is not as expected: %.80s",
			b->name, out);
		free(out);
		return -1;
	}
	for (const char *l = strchr(hdr, '\n'); l && *++l; l = strchr(l, '\n')) {
		char name[64], addr[64], adm[16], port[16];
		field(l, cn, ' ', name, sizeof(name));
		field(l, ca, ' ', addr, sizeof(addr));
		field(l, cs, ' ', adm, sizeof(adm));
		field(l, cp, ' ', port, sizeof(port));
		int k = name[0] == 'r' ? atoi(name + 1) : 0;
		if (k < 1 || k > SLOTS_MAX)
			continue;
		if (k > b->n) { /* the slots the configuration made */
			b->s = realloc(b->s, (size_t)k * sizeof(*b->s));
			memset(b->s + b->n, 0, (size_t)(k - b->n) * sizeof(*b->s));
			b->n = k;
		}
		struct slot *s = &b->s[k - 1];
		s->port = (atoi(adm) & 0x01) ? 0 : atoi(port); /* forced maintenance: free */
		snprintf(s->addr, sizeof(s->addr), "%s", addr);
		s->draining = (atoi(adm) & 0x08) != 0;
	}
	free(out);
	return 0;
}

static int hap_do(const char *sock, struct xp_err *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int hap_do(const char *sock, struct xp_err *err, const char *fmt, ...)
{
	char cmd[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char *out = hap(sock, cmd, err);
	if (!out)
		return -1;
	int bad = strstr(out, "No such") || strstr(out, "not found") || strstr(out, "Require");
	if (bad)
		xp_errf(err, XP_EIO, "HAProxy refused '%s': %.200s", cmd, out);
	free(out);
	return bad ? -1 : 0;
}

/* current sessions of each slot of b (-1: unknown) */
static void sessions(const char *sock, const struct backend *b, int *cur)
{
	struct xp_err err = { 0 };
	for (int i = 0; i < b->n; i++)
		cur[i] = -1;
	char *out = hap(sock, "show stat", &err);
	const char *hdr = out ? strstr(out, "# pxname") : NULL;
	int cs = hdr ? column(hdr, "scur", ',') : -1;
	for (const char *l = hdr ? strchr(hdr, '\n') : NULL; l && *++l && cs >= 0;
	     l = strchr(l, '\n')) {
		char px[80], sv[64], sc[16];
		field(l, 0, ',', px, sizeof(px));
		field(l, 1, ',', sv, sizeof(sv));
		field(l, cs, ',', sc, sizeof(sc));
		int k = sv[0] == 'r' ? atoi(sv + 1) : 0;
		if (!strcmp(px, b->name) && k >= 1 && k <= b->n)
			cur[k - 1] = atoi(sc);
	}
	free(out);
}

/* the endpoint of eps at s's address, or NULL */
static json_t *has_endpoint(json_t *eps, const struct slot *s)
{
	size_t i;
	json_t *e;
	json_array_foreach(eps, i, e)
	{
		long long port = 0;
		xp_cli_jint(e, "port", &port);
		if (port == s->port && !strcmp(xp_cli_jstr(e, "address") ?: "", s->addr))
			return e;
	}
	return NULL;
}

/* the endpoint's weight (a canary's share) onto its slot */
static int set_weight(const char *sock, struct backend *b, int i, json_t *e, struct xp_err *err)
{
	long long w = 100;
	xp_cli_jint(e, "weight", &w);
	w = w < 0 ? 0 : w > 256 ? 256 : w;
	if (b->s[i].weight == (int)w)
		return 0;
	b->s[i].weight = (int)w;
	return hap_do(sock, err, "set server %s/r%d weight %lld", b->name, i + 1, w);
}

static struct slot *slot_of(struct backend *b, const char *addr, int port)
{
	for (int i = 0; i < b->n; i++)
		if (b->s[i].port == port && !strcmp(b->s[i].addr, addr))
			return &b->s[i];
	return NULL;
}

/* endpoints without a slot take a free one: set first, so a pass that also
 * drains a gone slot never leaves the backend without a server */
static int add_new(const char *sock, struct backend *b, json_t *eps, struct xp_err *err)
{
	size_t k;
	json_t *e;
	int rc = 0;
	json_array_foreach(eps, k, e)
	{
		const char *addr = xp_cli_jstr(e, "address");
		long long port = 0;
		xp_cli_jint(e, "port", &port);
		if (!addr || port <= 0 || slot_of(b, addr, (int)port))
			continue;
		struct slot *free_slot = NULL;
		for (int i = 0; i < b->n && !free_slot; i++)
			if (!b->s[i].port)
				free_slot = &b->s[i];
		if (!free_slot) {
			fprintf(stderr,
				"xpool service proxy-sync: %s: no free slot for %s:%lld (make the "
				"configuration again with more --slots)\n",
				b->name, addr, port);
			return 0;
		}
		int i = (int)(free_slot - b->s) + 1;
		rc = hap_do(sock, err, "set server %s/r%d addr %s port %lld", b->name, i, addr, port);
		free_slot->weight = 0;
		if (rc == 0)
			rc = set_weight(sock, b, i - 1, e, err);
		if (rc == 0)
			rc = hap_do(sock, err, "set server %s/r%d state ready", b->name, i);
		if (rc < 0)
			return rc;
		snprintf(free_slot->addr, sizeof(free_slot->addr), "%s", addr);
		free_slot->port = (int)port;
		free_slot->draining = 0;
		printf("proxy-sync: %s/r%d %s:%lld ready\n", b->name, i, addr, port);
	}
	return 0;
}

/* Slots that left the endpoints drain, and go to maintenance once idle
 * (or after drain_max ms); a draining one whose endpoint is back serves
 * again; the others take their endpoint's weight. */
static int sync_backend(const char *sock, struct backend *b, json_t *eps, long long drain_max,
			long long now, struct xp_err *err)
{
	int rc = add_new(sock, b, eps, err), looked = 0;
	int *cur = calloc((size_t)b->n + 1, sizeof(int));
	for (int i = 0; i < b->n && rc == 0; i++) {
		struct slot *s = &b->s[i];
		if (!s->port)
			continue;
		json_t *wanted = has_endpoint(eps, s);
		if (wanted && !s->draining) {
			rc = set_weight(sock, b, i, wanted, err);
		} else if (!wanted && !s->draining) {
			rc = hap_do(sock, err, "set server %s/r%d state drain", b->name, i + 1);
			s->draining = 1;
			s->since = now;
			printf("proxy-sync: %s/r%d %s:%d draining\n", b->name, i + 1, s->addr, s->port);
		} else if (wanted) { /* back: it serves again */
			rc = hap_do(sock, err, "set server %s/r%d state ready", b->name, i + 1);
			s->draining = 0;
		} else {
			if (!looked++)
				sessions(sock, b, cur);
			if (cur[i] == 0 || now - s->since >= drain_max) {
				rc = hap_do(sock, err, "set server %s/r%d state maint", b->name,
					    i + 1);
				printf("proxy-sync: %s/r%d %s:%d removed\n", b->name, i + 1, s->addr,
				       s->port);
				s->port = 0;
				s->draining = 0;
			}
		}
	}
	free(cur);
	fflush(stdout);
	return rc;
}

static struct backend *backend_of(struct backend **bs, size_t *n, const char *svc,
				  const char *sock, struct xp_err *err)
{
	char name[80];
	snprintf(name, sizeof(name), "svc_%s", svc);
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*bs)[i].name, name))
			return &(*bs)[i];
	struct backend b = { .n = 0, .s = NULL };
	snprintf(b.name, sizeof(b.name), "%s", name);
	if (load_slots(sock, &b, err) < 0) {
		free(b.s);
		return NULL;
	}
	*bs = realloc(*bs, (*n + 1) * sizeof(**bs));
	(*bs)[*n] = b;
	return &(*bs)[(*n)++];
}

/* one pass over every proxied service; 0, or -1 with x->err set. *version
 * gets the endpoints' version the pass saw, *first a service to watch */
static int sync_pass(struct xp_cli *x, const char *sock, struct backend **bs, size_t *nb,
		     long long drain_max, long long *version, char *first, size_t flen)
{
	json_t *svcs = NULL, *s;
	size_t i;
	int rc = proxied(x, &svcs);
	json_array_foreach(rc == 0 ? svcs : NULL, i, s)
	{
		struct xp_sb p = { 0 };
		json_t *reply = NULL;
		xp_sb_puts(&p, "/v1/services/");
		xp_client_escape(&p, xp_cli_jstr(s, "name"));
		xp_sb_puts(&p, "/endpoints");
		struct backend *b = backend_of(bs, nb, xp_cli_jstr(s, "name"), sock, &x->err);
		rc = b ? xp_cli_call(x, "GET", p.s, NULL, &reply) : -1;
		if (rc == 0)
			rc = sync_backend(sock, b, json_object_get(reply, "endpoints"), drain_max,
					  xp_cli_now_ms(), &x->err);
		if (rc == 0 && i == 0) {
			xp_cli_jint(reply, "version", version);
			snprintf(first, flen, "%s", xp_cli_jstr(s, "name"));
		}
		json_decref(reply);
		xp_sb_free(&p);
		if (rc < 0)
			break;
	}
	/* the backends of services no longer listed drain and empty */
	for (size_t k = 0; rc == 0 && k < *nb; k++) {
		int listed = 0;
		json_array_foreach(svcs, i, s)
		{
			char name[80];
			snprintf(name, sizeof(name), "svc_%s", xp_cli_jstr(s, "name"));
			listed |= !strcmp(name, (*bs)[k].name);
		}
		json_t *none = json_array();
		if (!listed)
			rc = sync_backend(sock, &(*bs)[k], none, drain_max, xp_cli_now_ms(),
					  &x->err);
		json_decref(none);
	}
	json_decref(svcs);
	return rc;
}

/* Until the next pass: with nothing draining, a long poll on the endpoints
 * (any service's change ends it, or 10 s); else one interval. */
static void wait_change(struct xp_cli *x, const struct backend *bs, size_t nb, long long version,
			const char *first, int64_t interval)
{
	int draining = 0; /* a draining slot is looked at every interval */
	for (size_t i = 0; i < nb; i++)
		for (int k = 0; k < bs[i].n; k++)
			draining |= bs[i].s[k].draining;
	if (!draining && version >= 0 && first[0]) {
		struct xp_sb p = { 0 };
		json_t *r = NULL;
		xp_sb_puts(&p, "/v1/services/");
		xp_client_escape(&p, first);
		xp_sb_printf(&p, "/endpoints?since=%lld&wait=10", version);
		int rc = xp_cli_call(x, "GET", p.s, NULL, &r);
		json_decref(r);
		xp_sb_free(&p);
		if (rc == 0)
			return;
	}
	struct timespec ts = { interval / 1000, (interval % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

int xp_verb_proxy_sync(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"service proxy-sync",
		"xpool service proxy-sync [NAME...] --socket PATH [--interval DURATION] "
		"[--drain-max DURATION] [--once]",
		"Keep a running HAProxy (configured by `xpool service proxy-config`) in step "
		"with the services' endpoints through its runtime API: new replicas take a "
		"free slot, gone ones drain and leave once idle. It waits on the endpoints "
		"with a long poll (and looks every --interval while a slot drains). Runs "
		"until stopped.",
		"NAME",
		0,
		-1,
	};
	struct xp_flag flags[] = {
		{ "socket", XP_FLAG_STR, "PATH", "HAProxy's runtime API socket (stats socket)" },
		{ "interval", XP_FLAG_STR, "DURATION", "how often to look (default 200ms)" },
		{ "drain-max", XP_FLAG_STR, "DURATION",
		  "the longest a slot drains before it leaves (default 30s)" },
		{ "once", XP_FLAG_BOOL, NULL, "one pass, then exit" },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	struct xp_cli x;
	struct backend *bs = NULL;
	size_t nb = 0;
	int64_t interval = 200, drain_max = 30000;
	int status = 2;
	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	const struct xp_flag *sock = xp_flag_get(flags, "socket");
	if (!sock->given) {
		xp_cli_errorf(&x, 2, "--socket: HAProxy's runtime API socket is needed");
		goto out;
	}
	if ((xp_flag_get(flags, "interval")->given &&
	     (xp_duration_parse(xp_flag_get(flags, "interval")->sval, 60000, &interval) < 0 ||
	      interval < 10)) ||
	    (xp_flag_get(flags, "drain-max")->given &&
	     xp_duration_parse(xp_flag_get(flags, "drain-max")->sval, 3600000, &drain_max) < 0)) {
		xp_cli_errorf(&x, 2, "--interval, --drain-max: expected durations (10ms..1m, ..1h)");
		goto out;
	}
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	for (;;) {
		long long version = -1;
		char first[64] = "";
		if (sync_pass(&x, sock->sval, &bs, &nb, drain_max, &version, first,
			      sizeof(first)) < 0) {
			status = xp_cli_fail_api(&x);
			if (xp_flag_get(flags, "once")->bval)
				goto out;
		}
		if (xp_flag_get(flags, "once")->bval)
			break;
		wait_change(&x, bs, nb, version, first, interval);
	}
	status = 0;
out:
	for (size_t i = 0; i < nb; i++)
		free(bs[i].s);
	free(bs);
	return xp_cli_end(&x, status);
}
