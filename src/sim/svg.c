/*
 * svg: line charts (see svg.h).
 */
#include "svg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../lib/strbuf.h"
#include "../lib/fileio.h"

#define W  720
#define H  400
#define ML 70 /* margins */
#define MR 20
#define MT 40
#define MB 60

static const char *const colours[] = { "#2563eb", "#d97706", "#16a34a", "#dc2626",
				       "#7c3aed", "#0891b2", "#65a30d", "#db2777" };

/* a round step giving about n ticks over span */
static double tick_step(double span, int n)
{
	if (span <= 0)
		return 1;
	double raw = span / n, p = pow(10, floor(log10(raw))), m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void esc(struct xp_sb *b, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '<')
			xp_sb_puts(b, "&lt;");
		else if (*s == '>')
			xp_sb_puts(b, "&gt;");
		else if (*s == '&')
			xp_sb_puts(b, "&amp;");
		else
			xp_sb_putc(b, *s);
	}
}

int xp_svg_lines(const char *path, const char *title, const char *xlabel, const char *ylabel,
		 const struct xp_svg_series *s, size_t ns, struct xp_err *err)
{
	double x0 = INFINITY, x1 = -INFINITY, y0 = 0, y1 = -INFINITY;
	for (size_t i = 0; i < ns; i++)
		for (size_t k = 0; k < s[i].n; k++) {
			if (!isfinite(s[i].x[k]) || !isfinite(s[i].y[k]))
				continue;
			x0 = fmin(x0, s[i].x[k]);
			x1 = fmax(x1, s[i].x[k]);
			y0 = fmin(y0, s[i].y[k]);
			y1 = fmax(y1, s[i].y[k]);
		}
	if (!isfinite(x0)) {
		x0 = 0;
		x1 = 1;
	}
	if (x1 <= x0)
		x1 = x0 + 1;
	if (!isfinite(y1) || y1 <= y0)
		y1 = y0 + 1;
	double ys = tick_step(y1 - y0, 5), xs = tick_step(x1 - x0, 8);
	y1 = ceil(y1 / ys) * ys;
	const double pw = W - ML - MR, ph = H - MT - MB;
#define PX(v) (ML + ((v) - x0) / (x1 - x0) * pw)
#define PY(v) (MT + ph - ((v) - y0) / (y1 - y0) * ph)
	struct xp_sb b = { 0 };
	xp_sb_printf(&b,
		     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		     "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		     "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n<text x=\"%d\" y=\"24\" "
		     "font-size=\"15\" font-weight=\"bold\">",
		     W, H, W, H, ML);
	esc(&b, title);
	xp_sb_puts(&b, "</text>\n");
	for (int i = 0; y0 + i * ys <= y1 + ys / 2; i++) {
		double v = y0 + i * ys;
		if (fabs(v) < ys * 1e-9) /* no -4e-16 for a zero */
			v = 0;
		xp_sb_printf(&b,
			     "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e7eb\"/>"
			     "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			     ML, W - MR, PY(v), PY(v), ML - 6, PY(v) + 4, v);
	}
	for (int i = 0; ceil(x0 / xs) * xs + i * xs <= x1 + xs / 1e6; i++) {
		double v = ceil(x0 / xs) * xs + i * xs;
		if (fabs(v) < xs * 1e-9)
			v = 0;
		xp_sb_printf(&b,
			     "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#9ca3af\"/>"
			     "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
			     PX(v), PX(v), MT + (int)ph, MT + (int)ph + 5, PX(v), MT + (int)ph + 18,
			     v);
	}
	xp_sb_printf(&b,
		     "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#374151\"/>"
		     "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#374151\"/>\n",
		     ML, W - MR, MT + (int)ph, MT + (int)ph, ML, ML, MT, MT + (int)ph);
	xp_sb_printf(&b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", ML + pw / 2, H - 18);
	esc(&b, xlabel);
	xp_sb_printf(&b, "</text>\n<text transform=\"translate(16,%.1f) rotate(-90)\" "
			 "text-anchor=\"middle\">",
		     MT + ph / 2);
	esc(&b, ylabel);
	xp_sb_puts(&b, "</text>\n");
	for (size_t i = 0; i < ns; i++) {
		size_t ci = s[i].colour ? s[i].colour - 1 : i;
		const char *c = colours[ci % (sizeof(colours) / sizeof(colours[0]))];
		const char *dash = s[i].dashed ? " stroke-dasharray=\"6 4\"" : "";
		xp_sb_printf(&b,
			     "<polyline fill=\"none\" stroke=\"%s\"%s stroke-width=\"1.6\" "
			     "points=\"",
			     c, dash);
		for (size_t k = 0; k < s[i].n; k++)
			if (isfinite(s[i].x[k]) && isfinite(s[i].y[k]))
				xp_sb_printf(&b, "%.1f,%.1f ", PX(s[i].x[k]), PY(s[i].y[k]));
		xp_sb_printf(&b,
			     "\"/>\n<line x1=\"%d\" x2=\"%d\" y1=\"%zu\" y2=\"%zu\" stroke=\"%s\"%s "
			     "stroke-width=\"3\"/><text x=\"%d\" y=\"%zu\">",
			     W - MR - 230, W - MR - 216, MT + 7 + 16 * i, MT + 7 + 16 * i, c, dash,
			     W - MR - 212, MT + 10 + 16 * i);
		esc(&b, s[i].name);
		xp_sb_puts(&b, "</text>\n");
	}
	xp_sb_puts(&b, "</svg>\n");
#undef PX
#undef PY
	struct xp_afile f;
	int rc = xp_afile_open(&f, path, err);
	if (rc == 0) {
		if (fwrite(b.s, 1, b.len, f.f) != b.len) {
			xp_afile_abort(&f);
			rc = xp_errf(err, XP_EIO, "%s: %s", path, strerror(errno));
		} else {
			rc = xp_afile_commit(&f, err);
		}
	}
	xp_sb_free(&b);
	return rc;
}
