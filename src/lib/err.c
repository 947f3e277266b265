/* err: the error table and error-text helpers (see err.h). */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *xp_strerror(int code)
{
	switch (code) {
#define XP_ERR_MSG(name, c, msg, http)                                                             \
	case c:                                                                                    \
		return msg;
		XP_ERR_MAP(XP_ERR_MSG)
#undef XP_ERR_MSG
	}
	if (code == 0)
		return "success";
	if (code < 0 && code > -1000)
		return strerror(-code);
	return "unknown error";
}

const char *xp_errname(int code)
{
	switch (code) {
#define XP_ERR_NAME(name, c, msg, http)                                                            \
	case c:                                                                                    \
		return #name;
		XP_ERR_MAP(XP_ERR_NAME)
#undef XP_ERR_NAME
	}
	if (code == 0)
		return "OK";
	return code < 0 && code > -1000 ? "ESYS" : "EUNKNOWN";
}

int xp_errhttp(int code)
{
	switch (code) {
#define XP_ERR_HTTP(name, c, msg, http)                                                            \
	case c:                                                                                    \
		return http;
		XP_ERR_MAP(XP_ERR_HTTP)
#undef XP_ERR_HTTP
	}
	return code == 0 ? 200 : 500;
}

int xp_errf(struct xp_err *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->text, sizeof(err->text), fmt, ap);
		va_end(ap);
	}
	return code;
}

void xp_err_prefix(struct xp_err *err, const char *fmt, ...)
{
	char pre[XP_ERR_TEXT_MAX], old[XP_ERR_TEXT_MAX];
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	memcpy(old, err->text, sizeof(old));
	size_t lp = strnlen(pre, sizeof(pre) - 1), lo = strnlen(old, sizeof(old) - 1);
	if (lp > sizeof(err->text) - 1)
		lp = sizeof(err->text) - 1;
	if (lo > sizeof(err->text) - 1 - lp)
		lo = sizeof(err->text) - 1 - lp;
	memcpy(err->text, pre, lp);
	memcpy(err->text + lp, old, lo);
	err->text[lp + lo] = '\0';
}
