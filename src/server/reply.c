/*
 * reply: every API reply goes through here - JSON bodies, plain text, and
 * the one family of error replies, whose body is always
 * {"error": {"code": "EINVAL", "message": "...", "field": "..."}} with the
 * HTTP status taken from the error table (src/lib/err.h).
 */
#include "ctl.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/xalloc.h"

char *xp_json_take(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
	json_decref(o);
	return s;
}

void xp_reply_json(struct xp_cmd *cmd, int status, char *json)
{
	free(cmd->reply);
	cmd->status = status;
	cmd->reply = json ? json : xstrdup("{}");
	cmd->reply_type = "application/json";
}

void xp_reply_text(struct xp_cmd *cmd, int status, const char *type, char *text)
{
	free(cmd->reply);
	cmd->status = status;
	cmd->reply = text;
	cmd->reply_type = type;
}

char *xp_error_body(int code, const char *field, const char *msg)
{
	json_t *e = json_pack("{s:s,s:s}", "code", xp_errname(code), "message", msg);
	if (field && *field)
		json_object_set_new(e, "field", json_string(field));
	return xp_json_take(json_pack("{s:o}", "error", e));
}

void xp_reply_error(struct xp_cmd *cmd, int code, const char *field, const char *fmt, ...)
{
	char msg[XP_ERR_TEXT_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	xp_reply_json(cmd, xp_errhttp(code), xp_error_body(code, field, msg));
}

void xp_reply_err(struct xp_cmd *cmd, const struct xp_err *err, const char *field)
{
	xp_reply_error(cmd, err->code, field, "%s",
		       err->text[0] ? err->text : xp_strerror(err->code));
}

const char *xp_cmd_query(const struct xp_cmd *cmd, const char *key)
{
	for (int i = 0; i < cmd->nquery; i++)
		if (!strcmp(cmd->query_keys[i], key))
			return cmd->query_vals[i];
	return NULL;
}

json_t *xp_cmd_body_object(struct xp_cmd *cmd, const char *const *allowed)
{
	json_error_t je;
	json_t *o;

	if (cmd->body_obj) { /* parsed at the edge (http_routes.c) */
		o = json_incref(cmd->body_obj);
		goto fields;
	}
	if (!cmd->len) {
		xp_reply_error(cmd, XP_EINVAL, NULL, "a JSON body is required");
		return NULL;
	}
	if (!cmd->body_json) {
		xp_reply_error(cmd, XP_EINVAL, NULL, "expected Content-Type: application/json");
		return NULL;
	}
	o = json_loadb(cmd->body, cmd->len, JSON_REJECT_DUPLICATES, &je);
	if (!o) {
		xp_reply_error(cmd, XP_EINVAL, NULL, "body:%d:%d: %s", je.line, je.column, je.text);
		return NULL;
	}
fields:
	if (!json_is_object(o)) {
		json_decref(o);
		xp_reply_error(cmd, XP_EINVAL, NULL, "expected a JSON object");
		return NULL;
	}
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		int ok = 0;
		for (int i = 0; allowed[i]; i++)
			ok |= !strcmp(allowed[i], k);
		if (!ok) {
			xp_reply_error(cmd, XP_EINVAL, k, "%s: unknown field", k);
			json_decref(o);
			return NULL;
		}
	}
	return o;
}
