/*
 * http_acct: who may connect, and how long a stranger may stay (issue 19's
 * accounting, http.c's admission). A connection that has not passed
 * admission is a stranger: counted per source address (--max-strangers)
 * and in all (three quarters of --max-connections), and closed once it has
 * been open 30 s (header_timeout_ms) without passing admission. A stranger
 * gets at most one answer (a refusal, /healthz): libmicrohttpd closes a
 * connection whose reply is queued from the request's first call, so the
 * time counts from the accept, whatever bytes trickle in (slowloris).
 *
 * Why the strangers' timeout is kept here and not by libmicrohttpd: it
 * keeps connections that use the daemon-wide timeout in a list sorted by
 * activity, and walks only its expired tail each round; a connection given
 * its own timeout (MHD_CONNECTION_OPTION_TIMEOUT) goes to a second list
 * that it walks in full - MHD_get_timeout and a MHD_connection_handle_idle
 * call on each - twice every loop round of its worker (0.9.75, Debian 12).
 * Giving each admitted connection its longer idle timeout that way made
 * every round O(connections): with 100,000 agents' long polls it was the
 * top of the controller's profile (docs/results/scale.md). So every
 * connection has the daemon-wide idle timeout (XP_IDLE_TIMEOUT_S), and the
 * strangers sit in a FIFO by their accept, which a
 * reaper thread pops as they expire: it shuts the socket down, and
 * libmicrohttpd, reading its end, closes the connection as if the client
 * had. The reaper may do so from its own thread because the record and
 * the descriptor live together under acct.mu: libmicrohttpd notifies
 * MHD_CONNECTION_NOTIFY_CLOSED (which unlinks the record, under acct.mu)
 * before it closes the descriptor, so a descriptor the reaper sees is never
 * another connection's.
 *
 * The per-address counts are a hash table, so an accept costs O(1) however
 * many addresses hold strangers (100,000 agents each from its own address).
 */
#include "http_int.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../lib/xalloc.h"

#define IP_BUCKETS 4096

struct ipcount {
	uint32_t ip, n;
	struct ipcount *next;
};

static size_t ip_bucket(uint32_t ip)
{
	return (ip * 2654435761u) % IP_BUCKETS;
}

static struct ipcount *ip_slot(struct xp_http_acct *a, uint32_t ip, int add)
{
	size_t b = ip_bucket(ip);
	for (struct ipcount *s = a->ips ? a->ips[b] : NULL; s; s = s->next)
		if (s->ip == ip)
			return s;
	if (!add)
		return NULL;
	if (!a->ips)
		a->ips = xcalloc(IP_BUCKETS, sizeof(*a->ips));
	struct ipcount *s = XNEW(struct ipcount);
	s->ip = ip;
	s->next = a->ips[b];
	a->ips[b] = s;
	a->nips++;
	return s;
}

/* the FIFO of strangers: oldest (first to expire) at the head */
static void fifo_unlink(struct xp_http_acct *a, struct connrec *r)
{
	if (!r->queued)
		return;
	if (r->sprev)
		r->sprev->snext = r->snext;
	else
		a->shead = r->snext;
	if (r->snext)
		r->snext->sprev = r->sprev;
	else
		a->stail = r->sprev;
	r->sprev = r->snext = NULL;
	r->queued = 0;
}

static void fifo_append(struct xp_http_acct *a, struct connrec *r)
{
	r->sprev = a->stail;
	r->snext = NULL;
	if (a->stail)
		a->stail->snext = r;
	else
		a->shead = r;
	a->stail = r;
	r->queued = 1;
}

/* one fewer connection before admission from r's address (under acct.mu) */
static void unauth_drop(struct xp_http_acct *a, struct connrec *r)
{
	size_t b = ip_bucket(r->ip);
	for (struct ipcount **p = a->ips ? &a->ips[b] : NULL; p && *p; p = &(*p)->next)
		if ((*p)->ip == r->ip) {
			if (--(*p)->n == 0) { /* keep the table to the addresses holding some */
				struct ipcount *s = *p;
				*p = s->next;
				free(s);
				a->nips--;
			}
			break;
		}
	fifo_unlink(a, r);
	a->unauth--;
}

enum MHD_Result xp_http_on_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
	struct xp_ctl *ctl = cls;
	if (len < (socklen_t)sizeof(struct sockaddr_in) || addr->sa_family != AF_INET)
		return MHD_YES;
	uint32_t ip = ((const struct sockaddr_in *)addr)->sin_addr.s_addr;
	pthread_mutex_lock(&ctl->acct.mu);
	struct ipcount *s = ip_slot(&ctl->acct, ip, 0);
	int ok = (!s || s->n < ctl->o.max_strangers) &&
		 ctl->acct.unauth < ctl->o.max_connections - ctl->o.max_connections / 4 &&
		 ctl->acct.total < ctl->o.max_connections;
	if (!ok)
		ctl->acct.refused++;
	pthread_mutex_unlock(&ctl->acct.mu);
	return ok ? MHD_YES : MHD_NO;
}

/* TLS: GnuTLS writes a handshake flight and a reply as several records,
 * each a send() that libmicrohttpd does not cork; with Nagle on, the second
 * waits for the client's delayed ACK (40 ms a step, measured: 80 ms for
 * one CLI call). So the records go at once. */
static void tls_nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void conn_started(struct xp_ctl *ctl, struct MHD_Connection *c, void **socket_context)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	struct connrec *r = XNEW(struct connrec);
	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
		r->ip = ((const struct sockaddr_in *)ci->client_addr)->sin_addr.s_addr;
	const union MHD_ConnectionInfo *fi =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	r->fd = fi ? fi->connect_fd : -1;
	if (ctl->tls_pem[0] && r->fd >= 0)
		tls_nodelay(r->fd);
	*socket_context = r;
	pthread_mutex_lock(&ctl->acct.mu);
	ip_slot(&ctl->acct, r->ip, 1)->n++;
	ctl->acct.unauth++;
	ctl->acct.total++;
	r->since = xp_ctl_now();
	if (r->fd >= 0)
		fifo_append(&ctl->acct, r);
	pthread_mutex_unlock(&ctl->acct.mu);
}

void xp_http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			   enum MHD_ConnectionNotificationCode code)
{
	struct xp_ctl *ctl = cls;
	struct connrec *r = *socket_context;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		conn_started(ctl, c, socket_context);
		return;
	}
	if (!r)
		return;
	pthread_mutex_lock(&ctl->acct.mu);
	if (!r->admitted)
		unauth_drop(&ctl->acct, r);
	ctl->acct.total--;
	pthread_mutex_unlock(&ctl->acct.mu);
	free(r->reply);
	free(r);
	*socket_context = NULL;
}

static struct connrec *rec_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

void xp_http_admitted(struct conn *k)
{
	struct connrec *r = rec_of(k->c);
	if (!r || r->admitted)
		return;
	pthread_mutex_lock(&k->ctl->acct.mu);
	r->admitted = 1;
	unauth_drop(&k->ctl->acct, r);
	pthread_mutex_unlock(&k->ctl->acct.mu);
}

/* ---- the reaper ---- */

static void *reaper_main(void *arg)
{
	struct xp_ctl *ctl = arg;
	struct xp_http_acct *a = &ctl->acct;
	int64_t limit = ctl->o.header_timeout_ms;
	pthread_mutex_lock(&a->mu);
	while (!a->reaper_stop) {
		int64_t now = xp_ctl_now();
		while (a->shead && now - a->shead->since >= limit) {
			struct connrec *r = a->shead;
			fifo_unlink(a, r); /* still a stranger until it closes */
			shutdown(r->fd, SHUT_RDWR);
			a->reaped++;
		}
		/* the head expires first; one that comes later expires later */
		int64_t at = (a->shead ? a->shead->since : now) + limit;
		struct timespec ts = { (time_t)(at / 1000), (long)(at % 1000) * 1000000 };
		pthread_cond_timedwait(&a->reaper_cv, &a->mu, &ts);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

int xp_http_acct_start(struct xp_ctl *ctl, struct xp_err *err)
{
	pthread_cond_init(&ctl->acct.reaper_cv, NULL);
	int rc = pthread_create(&ctl->acct.reaper, NULL, reaper_main, ctl);
	if (rc != 0) {
		pthread_cond_destroy(&ctl->acct.reaper_cv);
		return xp_errf(err, -rc, "cannot start the connection reaper: %s", strerror(rc));
	}
	ctl->acct.reaper_started = 1;
	return 0;
}

void xp_http_acct_stop(struct xp_ctl *ctl)
{
	struct xp_http_acct *a = &ctl->acct;
	if (!a->reaper_started)
		return;
	pthread_mutex_lock(&a->mu);
	a->reaper_stop = 1;
	pthread_cond_signal(&a->reaper_cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->reaper, NULL);
	pthread_cond_destroy(&a->reaper_cv);
	a->reaper_started = 0;
}

void xp_http_acct_free(struct xp_http_acct *a)
{
	for (size_t b = 0; a->ips && b < IP_BUCKETS; b++)
		while (a->ips[b]) {
			struct ipcount *s = a->ips[b];
			a->ips[b] = s->next;
			free(s);
		}
	free(a->ips);
	a->ips = NULL;
	a->nips = 0;
}
