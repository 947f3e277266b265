/* mix: the Slurm peer's job mix as xpool job specs (mix.h). */
#include "mix.h"

#include <stdio.h>
#include <string.h>

#include "lib/fileio.h"

/* cpus, GPUs, model: the rows of the peer's jobmix.tsv */
const struct xp_mix_row xp_mix[XP_MIX_ROWS] = {
	{ 1, 0, NULL },	  { 4, 1, "A100" }, { 8, 2, "A100" }, { 16, 4, "A100" },
	{ 4, 1, "V100" }, { 8, 2, "V100" }, { 2, 1, NULL },   { 32, 8, "A100" },
};

size_t xp_mix_spec(size_t i, const char *duration, char *buf, size_t len)
{
	const struct xp_mix_row *r = &xp_mix[i % XP_MIX_ROWS];
	char dev[128] = "", dur[64] = "";
	int n;

	if (r->gpus && r->model)
		snprintf(dev, sizeof(dev),
			 ",\"devices\":{\"count\":%d,\"class\":\"gpu\",\"models\":[\"%s\"]}",
			 r->gpus, r->model);
	else if (r->gpus)
		snprintf(dev, sizeof(dev), ",\"devices\":{\"count\":%d,\"class\":\"gpu\"}",
			 r->gpus);
	if (duration)
		snprintf(dur, sizeof(dur), ",\"duration\":\"%s\"", duration);
	n = snprintf(
		buf, len,
		"{\"command\":[\"sleep\",\"0\"],\"resources\":{\"cpu\":%d,\"memory\":\"%dGi\"%s}"
		"%s}",
		r->cpus, r->cpus, dev, dur);
	return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

char *xp_bench_token_file(const char *prog, const char *path)
{
	struct xp_err err = { 0 };
	char *buf = NULL;
	size_t len;
	if (xp_read_file(path, 4096, &buf, &len, &err) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err.text);
		return NULL;
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	return buf;
}
