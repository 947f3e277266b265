/*
 * config: where the controller is and which token to send (see client.h).
 *
 * Each value resolves on its own, first found wins:
 *
 *   address:  --addr, $XPOOL_ADDR, "addr:" in the file, 127.0.0.1:7700
 *   token:    --token, $XPOOL_TOKEN, "token:" or "token_file:" in the file
 *   CA file:  --ca, $XPOOL_CA, "ca:" in the file, the system's CAs; looked
 *             for only when the address is https://
 *
 * The file is $HOME/.config/xpool/config, a tiny "key: value" format:
 *
 *     # the dev controller
 *     addr: https://127.0.0.1:7700
 *     token_file: ~/xpool-data/admin.token
 *     ca: ~/xpool-data/tls/ca.pem
 *
 * Blank lines and '#' comments (whole lines, or after a blank) are skipped;
 * a value may be quoted with "" or ''. Unknown keys, repeated keys, lines
 * without ':', and both token and token_file are errors naming file:line,
 * so a typo never silently falls back to a default. A relative token_file
 * (or ca) is relative to the config file's folder; "~/" is $HOME. The token file
 * holds the token on its first line (surrounding blanks dropped).
 *
 * The file is read only when a flag or the environment left a value unset:
 * a script that passes both --addr and --token does not depend on it.
 */
#include "client.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../lib/fileio.h"
#include "../lib/xalloc.h"

#define CONFIG_MAX     (64u << 10)
#define TOKEN_FILE_MAX (16u << 10)

void xp_client_config_path(char *out, size_t len)
{
	const char *home = getenv("HOME");
	if (!home || !*home)
		snprintf(out, len, "%s", "");
	else
		snprintf(out, len, "%s/.config/xpool/config", home);
}

void xp_client_config_free(struct xp_client_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->addr);
	free(cfg->token);
	free(cfg->addr_from);
	free(cfg->token_from);
	free(cfg->ca);
	free(cfg->ca_from);
	memset(cfg, 0, sizeof(*cfg));
}

static void set(char **dst, char **from, const char *value, const char *origin)
{
	*dst = xstrdup(value);
	*from = xstrdup(origin);
}

static char *trim(char *s)
{
	char *e;
	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* path relative to dir unless absolute or "~/" */
static void full_path(struct xp_sb *full, const char *path, const char *dir)
{
	const char *home = getenv("HOME");
	if (path[0] == '~' && path[1] == '/' && home)
		xp_sb_printf(full, "%s/%s", home, path + 2);
	else if (path[0] == '/')
		xp_sb_puts(full, path);
	else
		xp_sb_printf(full, "%s/%s", dir, path);
}

/* Read the token from path (relative to dir unless absolute or "~/"). */
static int read_token_file(const char *path, const char *dir, const char *where, char **token,
			   struct xp_err *err)
{
	struct xp_sb full = { 0 };
	char *buf = NULL, *t;
	size_t len;
	int rc;

	full_path(&full, path, dir);
	rc = xp_read_file(full.s, TOKEN_FILE_MAX, &buf, &len, err);
	if (rc < 0) {
		xp_err_prefix(err, "%s: token_file: ", where);
		goto out;
	}
	if (memchr(buf, '\0', len)) {
		rc = xp_errf(err, XP_EINVAL, "%s: token_file %s is not a text file", where, full.s);
		goto out;
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	t = trim(buf);
	if (!*t) {
		rc = xp_errf(err, XP_EINVAL, "%s: token_file %s is empty", where, full.s);
		goto out;
	}
	*token = xstrdup(t);
out:
	free(buf);
	xp_sb_free(&full);
	return rc;
}

struct file_values {
	char *addr, *token, *token_file, *ca;
	char where_addr[4200], where_token[4200], where_ca[4200];
};

/* Parse the config file's text into v. */
static int parse_config(const char *path, char *text, struct file_values *v, struct xp_err *err)
{
	size_t lineno = 0;
	char *line;

	for (char *p = text; p && *p;) {
		char *nl = strchr(p, '\n');
		line = p;
		if (nl)
			*nl = '\0';
		p = nl ? nl + 1 : NULL;
		lineno++;

		char *hash = NULL;
		/* a comment starts a line or follows a blank */
		for (char *q = line; *q; q++)
			if (*q == '#' && (q == line || isspace((unsigned char)q[-1]))) {
				hash = q;
				break;
			}
		if (hash)
			*hash = '\0';
		char *l = trim(line);
		if (!*l)
			continue;
		char *colon = strchr(l, ':');
		size_t kl = colon ? (size_t)(colon - l) : 0;
		while (kl > 0 && isspace((unsigned char)l[kl - 1]))
			kl--;
		if (!colon || kl == 0 || strspn(l, "abcdefghijklmnopqrstuvwxyz_") != kl)
			return xp_errf(err, XP_EINVAL, "%s:%zu: expected 'key: value', got '%s'",
				       path, lineno, l);
		l[kl] = '\0';
		char *key = l, *val = trim(colon + 1);
		size_t vl = strlen(val);
		if (vl >= 2 && (val[0] == '"' || val[0] == '\'') && val[vl - 1] == val[0]) {
			val[vl - 1] = '\0';
			val++;
		}
		if (!*val)
			return xp_errf(err, XP_EINVAL, "%s:%zu: %s: empty value", path, lineno,
				       key);
		char **slot;
		char *where;
		if (strcmp(key, "addr") == 0) {
			slot = &v->addr;
			where = v->where_addr;
		} else if (strcmp(key, "ca") == 0) {
			slot = &v->ca;
			where = v->where_ca;
		} else if (strcmp(key, "token") == 0 || strcmp(key, "token_file") == 0) {
			if (v->token || v->token_file)
				return xp_errf(err, XP_EINVAL,
					       "%s:%zu: %s: the token is already set at %s "
					       "(use token or token_file, once)",
					       path, lineno, key, v->where_token);
			slot = key[5] ? &v->token_file : &v->token;
			where = v->where_token;
		} else {
			return xp_errf(err, XP_EINVAL,
				       "%s:%zu: unknown key '%s' (expected addr, token, "
				       "token_file or ca)",
				       path, lineno, key);
		}
		if (*slot)
			return xp_errf(err, XP_EINVAL, "%s:%zu: %s is set twice (first at %s)",
				       path, lineno, key, where);
		*slot = xstrdup(val);
		snprintf(where, sizeof(v->where_addr), "%s:%zu", path, lineno);
	}
	return 0;
}

int xp_client_config_resolve(const char *flag_addr, const char *flag_token,
			     struct xp_client_config *cfg, struct xp_err *err)
{
	return xp_client_config_resolve_ca(flag_addr, flag_token, NULL, cfg, err);
}

static int is_https(const char *addr)
{
	return addr && !strncasecmp(addr, "https://", 8);
}

int xp_client_config_resolve_ca(const char *flag_addr, const char *flag_token, const char *flag_ca,
				struct xp_client_config *cfg, struct xp_err *err)
{
	struct file_values v = { 0 };
	char path[4096];
	const char *env;
	int rc = 0;

	memset(cfg, 0, sizeof(*cfg));
	if (flag_addr)
		set(&cfg->addr, &cfg->addr_from, flag_addr, "--addr");
	else if ((env = getenv("XPOOL_ADDR")) && *env)
		set(&cfg->addr, &cfg->addr_from, env, "XPOOL_ADDR");
	if (flag_token)
		set(&cfg->token, &cfg->token_from, flag_token, "--token");
	else if ((env = getenv("XPOOL_TOKEN")) && *env)
		set(&cfg->token, &cfg->token_from, env, "XPOOL_TOKEN");
	if (flag_ca)
		set(&cfg->ca, &cfg->ca_from, flag_ca, "--ca");
	else if ((env = getenv("XPOOL_CA")) && *env)
		set(&cfg->ca, &cfg->ca_from, env, "XPOOL_CA");

	xp_client_config_path(path, sizeof(path));
	/* the CA matters for https:// only (an unknown address may be one) */
	int want_ca = !cfg->ca && (!cfg->addr || is_https(cfg->addr));
	if ((!cfg->addr || !cfg->token || want_ca) && path[0]) {
		char *text = NULL;
		size_t len;
		struct xp_err ferr = { 0 };
		rc = xp_read_file(path, CONFIG_MAX, &text, &len, &ferr);
		if (rc == -ENOENT) {
			rc = 0;
		} else if (rc < 0) {
			*err = ferr;
		} else if (memchr(text, '\0', len)) {
			rc = xp_errf(err, XP_EINVAL, "%s: not a text file", path);
		} else {
			rc = parse_config(path, text, &v, err);
		}
		free(text);
		if (rc < 0)
			goto out;
		if (!cfg->addr && v.addr)
			set(&cfg->addr, &cfg->addr_from, v.addr, v.where_addr);
		if (!cfg->token && v.token)
			set(&cfg->token, &cfg->token_from, v.token, v.where_token);
		if (!cfg->token && v.token_file) {
			char *dir = xstrdup(path), *slash = strrchr(dir, '/');
			*slash = '\0';
			rc = read_token_file(v.token_file, dir, v.where_token, &cfg->token, err);
			free(dir);
			if (rc < 0)
				goto out;
			cfg->token_from = xstrdup(v.where_token);
		}
		if (!cfg->ca && v.ca && is_https(cfg->addr)) {
			struct xp_sb full = { 0 };
			char *dir = xstrdup(path);
			*strrchr(dir, '/') = '\0';
			full_path(&full, v.ca, dir);
			free(dir);
			cfg->ca = xp_sb_steal(&full);
			cfg->ca_from = xstrdup(v.where_ca);
		}
	}
	if (!cfg->addr)
		set(&cfg->addr, &cfg->addr_from, XP_CLIENT_DEFAULT_ADDR, "default");
	if (!cfg->token)
		rc = xp_errf(err, XP_EAUTH,
			     "no API token: pass --token TOKEN, set XPOOL_TOKEN, or put 'token: "
			     "TOKEN' or 'token_file: PATH' in %s (`xpool dev` prints its admin "
			     "token and writes it to DATA/admin.token)",
			     path[0] ? path : "~/.config/xpool/config");
out:
	free(v.addr);
	free(v.token);
	free(v.token_file);
	free(v.ca);
	if (rc < 0)
		xp_client_config_free(cfg);
	return rc;
}
