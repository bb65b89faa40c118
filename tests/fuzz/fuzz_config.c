/*
 * libFuzzer target over the config file parser and the parsers of the
 * environment's values (conffile.c).  The first byte picks the parser, the
 * rest is its input, given at its exact length (ASan sees any read past
 * it).  Besides crashes, it checks what the parsers promise: settings in
 * range, rules absolute and clean, warnings only for lines of the input.
 *
 *	make fuzz			# FUZZ_SECONDS (600) of fuzzing
 *	tests/fuzz/replay.sh build		# replay the corpus (make check does)
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "useonce.h"
#include "conf.h"

#define FUZZ_ASSERT(x)	do { if (!(x)) __builtin_trap(); } while (0)

struct fuzz_ctx {
	unsigned lines;		/* lines in the input, for warnings' line numbers */
	unsigned warnings;
};

static bool fuzz_is_program(void *arg, const char *name)
{
	FUZZ_ASSERT(name[0] != '\0');
	return !strcmp(name, "rsync") || !strcmp(name, "/usr/bin/rsync");
}

static void fuzz_warn(void *arg, unsigned line, const char *key, const char *value,
		      const char *why)
{
	struct fuzz_ctx *fc = arg;

	FUZZ_ASSERT(line >= 1 && line <= fc->lines);
	FUZZ_ASSERT(why && why[0]);
	FUZZ_ASSERT(!value || key);
	/* Warnings are printed: every string must be readable to its end. */
	FUZZ_ASSERT(strlen(why) + (key ? strlen(key) : 0) + (value ? strlen(value) : 0) <
		    UO_CONF_LINE_MAX + 200);
	fc->warnings++;
}

static void fuzz_check_settings(const struct uo_settings *s)
{
	if (s->set & UO_SET_THRESHOLD)
		FUZZ_ASSERT(s->threshold >= UO_SIZE_MIN && s->threshold <= UO_SIZE_MAX);
	if (s->set & UO_SET_WINDOW)
		FUZZ_ASSERT(s->window >= UO_SIZE_MIN && s->window <= UO_SIZE_MAX);
	if (s->set & UO_SET_GUARD)
		FUZZ_ASSERT(s->guard >= 1 && s->guard <= 3);
	if (s->set & UO_SET_REUSE)
		FUZZ_ASSERT(s->reuse_s <= UO_REUSE_MAX);
}

static void fuzz_config(const char *data, size_t size, const char *home)
{
	static struct uo_rules rules;
	struct uo_settings global = { 0 }, program = { 0 };
	struct fuzz_ctx fc = { .lines = 1 };
	struct uo_conf_ctx ctx = {
		.home = home, .is_program = fuzz_is_program, .warn = fuzz_warn, .arg = &fc,
	};
	char probe[UO_RULE_PATH + 8];
	unsigned i;
	size_t k;

	for (k = 0; k < size; k++)
		fc.lines += data[k] == '\n';
	memset(&rules, 0, sizeof(rules));
	uo_conf_parse(data, size, &ctx, &global, &program, &rules);
	fuzz_check_settings(&global);
	fuzz_check_settings(&program);
	FUZZ_ASSERT(rules.n <= UO_RULES_MAX);
	for (i = 0; i < rules.n; i++) {
		const struct uo_rule *r = &rules.rule[i];

		FUZZ_ASSERT(r->len == strlen(r->path) && r->len < UO_RULE_PATH);
		FUZZ_ASSERT(r->path[0] == '/');
		FUZZ_ASSERT(r->len == 1 || r->path[r->len - 1] != '/');
		FUZZ_ASSERT(r->kind == UO_RULE_NEVER || r->kind == UO_RULE_ALWAYS);
		/* A rule matches its own path and what lies under it. */
		FUZZ_ASSERT(uo_rules_match(&rules, r->path) != UO_RULE_NONE);
		memcpy(probe, r->path, r->len);
		memcpy(probe + r->len, "/x", 3);
		FUZZ_ASSERT(uo_rules_match(&rules, probe) != UO_RULE_NONE);
	}
	uo_rules_match(&rules, "/");
	uo_rules_match(&rules, "relative/path");
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *s, path[64];
	unsigned sel;
	uint64_t v;
	unsigned g;
	uint32_t r;
	bool b;
	int fd;

	if (size == 0)
		return 0;
	sel = data[0] % 8;
	/* Exactly the input's bytes, plus a NUL for the value parsers. */
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (sel) {
	case 0:
	case 1:
		fuzz_config(s, size - 1, sel ? "/home/fuzz" : NULL);
		break;
	case 2:
		if (!uo_parse_size(s, &v))
			FUZZ_ASSERT(s[0] >= '0' && s[0] <= '9');
		if (!uo_parse_size_setting(s, &v))
			FUZZ_ASSERT(v >= UO_SIZE_MIN && v <= UO_SIZE_MAX);
		break;
	case 3:
		if (!uo_parse_guard(s, &g))
			FUZZ_ASSERT(g >= 1 && g <= 3);
		break;
	case 4:
		if (!uo_parse_reuse(s, &r))
			FUZZ_ASSERT(r <= UO_REUSE_MAX);
		break;
	case 5:
		uo_parse_bool(s, &b);
		break;
	case 6:
	case 7:
		if (!uo_parse_dest(s, sel == 7, &fd, path, sizeof(path))) {
			FUZZ_ASSERT(fd >= -1 && fd < (1 << 20));
			FUZZ_ASSERT(fd < 0 || path[0] == '\0');
			FUZZ_ASSERT(!path[0] || (path[0] == '/' && strlen(path) < sizeof(path)));
		}
		break;
	}
	free(s);
	return 0;
}
