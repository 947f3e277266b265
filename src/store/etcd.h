/*
 * etcd: the few calls of etcd's v3 JSON gateway (etcd 3.4, POST /v3/...)
 * that the etcd store needs, over the client's own HTTP/1.1 transport.
 * One struct xp_etcd is one connection, for one thread at a time; each
 * thread that talks to etcd makes its own.
 *
 * Facts of the gateway this relies on (checked on Debian's etcd 3.4.23):
 * every call is a POST with a JSON body; bytes fields (keys, values) are
 * standard base64 with padding; 64-bit integers (revisions, lease ids)
 * come as JSON strings and are never parsed as doubles; default values are
 * left out (a failed txn has no "succeeded", an empty range no "kvs").
 *
 * Endpoints: an address list "etcd://host:port,host:port[/prefix]"
 * ("etcds://" for TLS, every member verified against a CA file). A call
 * goes to the current endpoint; when it cannot be reached, did not answer
 * in time, or says it has no leader, the call goes once to each next one
 * in turn. Every call this module makes is safe to repeat (puts of the
 * same bytes, guarded txns, reads).
 */
#ifndef XP_ETCD_H
#define XP_ETCD_H

#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"
#include "lib/strbuf.h"

#define XP_ETCD_MAX_OPS 128	       /* etcd's default --max-txn-ops */
#define XP_ETCD_MAX_BYTES (1024 * 1024) /* what a txn carries before base64 (limit 1.5 MiB) */

struct xp_etcd;

/* A key-value pair of a range reply; key and value decoded, NUL-terminated, valid during the
 * callback only. */
struct xp_etcd_kv {
	const char *key, *value;
	size_t klen, vlen;
	int64_t create_rev, mod_rev, lease;
};
typedef int (*xp_etcd_kv_fn)(void *ctx, const struct xp_etcd_kv *kv);

/* etcds://: ca, the CA file the members are verified against (NULL: the system's CAs);
 * cert and key, the client certificate presented to members that ask for one (etcd's
 * --client-cert-auth), both or neither. */
struct xp_etcd_tls {
	const char *ca, *cert, *key;
};

/* Parse url ("etcd://h:p[,h:p...][/prefix]", prefix default "/xpool/", always ending in '/';
 * "etcds://" speaks TLS as tls says (NULL: verified against the system's CAs, no client
 * certificate). 0, or XP_EINVAL naming what is wrong, or the files' errors. */
int xp_etcd_create(const char *url, const struct xp_etcd_tls *tls, struct xp_etcd **out,
		   struct xp_err *err);
struct xp_etcd *xp_etcd_dup(const struct xp_etcd *e); /* same endpoints, own connection */
void xp_etcd_destroy(struct xp_etcd *e);
const char *xp_etcd_prefix(const struct xp_etcd *e);
/* on: ranges are answered by the member that gets them, from what it has (no quorum read:
 * fast, and answered without quorum, maybe stale); off (default): linearizable. */
void xp_etcd_set_serializable(struct xp_etcd *e, int on);
const char *xp_etcd_url(const struct xp_etcd *e); /* as given, for messages */

/* POST path with the JSON body; on a 200 the parsed reply goes to *out (a json_t *, the caller
 * decrefs it). XP_EUNAVAIL when no endpoint answered (err says which and why), XP_EIO for a
 * reply that is not JSON or not 200 (err carries etcd's message: "etcdserver: mvcc: database
 * space exceeded"). timeout_ms bounds the whole call, every endpoint tried included: each gets
 * an equal share of the time left (at least 100 ms); so do the calls below that take one. */
int xp_etcd_post(struct xp_etcd *e, const char *path, const char *body, size_t len,
		 long timeout_ms, void **out, struct xp_err *err);

/* Keys [key, end) (end NULL: key alone; "\0" (len 1): every key >= key), at most limit (0: no
 * limit), in key order, each to fn. *more: more keys were left; *rev: the store's revision. */
int xp_etcd_range(struct xp_etcd *e, const char *key, size_t klen, const char *end, size_t elen,
		  long limit, long timeout_ms, xp_etcd_kv_fn fn, void *ctx, int *more,
		  int64_t *rev, struct xp_err *err);

/* Txn building: start, then compares, then ops (success branch only), then run. */
struct xp_etcd_txn {
	struct xp_sb b;
	int ncmp, nops, in_ops, closed;
	size_t bytes; /* key and value bytes of the ops so far */
};
void xp_etcd_txn_start(struct xp_etcd_txn *t);
/* compare: CREATE(key) == rev (rev 0: the key does not exist) */
void xp_etcd_txn_created(struct xp_etcd_txn *t, const char *key, size_t klen, int64_t rev);
void xp_etcd_txn_put(struct xp_etcd_txn *t, const char *key, size_t klen, const void *val,
		     size_t vlen, int64_t lease);
void xp_etcd_txn_delete(struct xp_etcd_txn *t, const char *key, size_t klen, const char *end,
			size_t elen);
/* Send it (again, after a failure: it is kept until xp_etcd_txn_free); *ok = succeeded (the
 * compares held), *rev = the revision after it. */
int xp_etcd_txn_run(struct xp_etcd *e, struct xp_etcd_txn *t, long timeout_ms, int *ok,
		    int64_t *rev, struct xp_err *err);
void xp_etcd_txn_free(struct xp_etcd_txn *t);

/* Leases. keepalive: *ttl the seconds left (0: the lease is gone); timeout_ms bounds the
 * whole call, shared among the endpoints (at least 100 ms each). */
int xp_etcd_grant(struct xp_etcd *e, long ttl_s, int64_t *id, struct xp_err *err);
int xp_etcd_keepalive(struct xp_etcd *e, int64_t id, long timeout_ms, int64_t *ttl,
		      struct xp_err *err);
int xp_etcd_revoke(struct xp_etcd *e, int64_t id, struct xp_err *err);
/* Compact history up to rev (physical: false); errors are only reported. */
int xp_etcd_compact(struct xp_etcd *e, int64_t rev, struct xp_err *err);

/* The key just past every key that starts with p (p's last byte + 1), written to out. */
size_t xp_etcd_prefix_end(const char *p, size_t n, char *out);

#endif
