/*
 * base64: RFC 4648 standard alphabet, with padding; strict when decoding.
 */
#include "base64.h"

#include <stdint.h>

static const char enc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void xp_b64_put(struct xp_sb *b, const void *p, size_t n)
{
	const unsigned char *s = p;
	char q[4];
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		q[0] = enc[v >> 18];
		q[1] = enc[(v >> 12) & 63];
		q[2] = enc[(v >> 6) & 63];
		q[3] = enc[v & 63];
		xp_sb_putn(b, q, 4);
	}
	if (i < n) {
		uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
		q[0] = enc[v >> 18];
		q[1] = enc[(v >> 12) & 63];
		q[2] = i + 1 < n ? enc[(v >> 6) & 63] : '=';
		q[3] = '=';
		xp_sb_putn(b, q, 4);
	}
}

static int val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

long xp_b64_decode(const char *s, size_t n, char *out)
{
	size_t o = 0;
	if (n % 4)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		int last = i + 4 == n;
		int a = val(s[i]), b = val(s[i + 1]), c = val(s[i + 2]), d = val(s[i + 3]);
		int pad2 = last && s[i + 2] == '=' && s[i + 3] == '=';
		int pad1 = last && !pad2 && s[i + 3] == '=';
		if (a < 0 || b < 0 || (c < 0 && !pad2) || (d < 0 && !pad1 && !pad2))
			return -1;
		out[o++] = (char)(a << 2 | b >> 4);
		if (!pad2)
			out[o++] = (char)((b & 15) << 4 | c >> 2);
		if (!pad1 && !pad2)
			out[o++] = (char)((c & 3) << 6 | d);
	}
	out[o] = '\0';
	return (long)o;
}
