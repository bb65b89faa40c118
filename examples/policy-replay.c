/*
 * Replays I/O through libuseonce's policy and prints what the preloaded
 * library would do about it, without touching any file.  Input lines:
 *
 *	r OFFSET LEN	a read of LEN bytes at OFFSET (sizes take K/M/G)
 *	w OFFSET LEN	a write
 *	c		the descriptor is closed
 *
 * Example: what happens to the first 100 MiB of a file read in 1 MiB calls:
 *	for i in $(seq 0 99); do echo "r ${i}M 1M"; done | build/policy-replay
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

static unsigned long long size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'K': case 'k': return v << 10;
	case 'M': case 'm': return v << 20;
	case 'G': case 'g': return v << 30;
	default: return v;
	}
}

static void show(const char *what, struct uo_range r)
{
	if (uo_range_empty(r))
		return;
	if (r.end == UO_EOF)
		printf("  %s %llu..EOF\n", what, (unsigned long long)r.start);
	else
		printf("  %s %llu..%llu (%llu MiB)\n", what, (unsigned long long)r.start,
		       (unsigned long long)r.end, (unsigned long long)((r.end - r.start) >> 20));
}

int main(void)
{
	struct uo_tuning tuning;
	struct uo_stream stream;
	char line[256], op[8], a[64], b[64];
	unsigned long n = 0;

	uo_tuning_defaults(&tuning);
	memset(&stream, 0, sizeof(stream));
	while (fgets(line, sizeof(line), stdin)) {
		struct uo_advice adv;
		int fields = sscanf(line, "%7s %63s %63s", op, a, b);

		n++;
		if (fields >= 1 && op[0] == 'c') {
			adv = uo_closing(&stream, &tuning);
		} else if (fields == 3 && (op[0] == 'r' || op[0] == 'w')) {
			struct uo_event ev = {
				.len = size(b),
				.end = size(a) + size(b),
				.dir = op[0] == 'r' ? UO_READ : UO_WRITE,
			};

			adv = uo_observe(&stream, &tuning, &ev);
		} else {
			fprintf(stderr, "policy-replay: line %lu: expected 'r OFF LEN', 'w OFF LEN' or 'c'\n", n);
			return 2;
		}
		if (adv.flags & UO_ADV_PROMOTED)
			printf("line %lu: now a stream\n", n);
		if (!uo_range_empty(adv.flush) || !uo_range_empty(adv.drop))
			printf("line %lu:\n", n);
		show("start writeback", adv.flush);
		show(adv.flags & UO_ADV_WAIT ? "drop (once written)" : "drop", adv.drop);
	}
	return 0;
}
