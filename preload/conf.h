/*
 * The config file and environment value parsers (conffile.c): text in,
 * settings out.  Pure C: no system calls, no globals, no allocation, so the
 * unit tests and the fuzzer run them on any buffer, and the library runs
 * them in its constructor before anything else is set up.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_CONF_H
#define UO_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

/* Sizes are accepted in this range (a folio .. 1 PiB). */
#define UO_SIZE_MIN	(2ULL << 20)
#define UO_SIZE_MAX	(1ULL << 50)
/* The longest reuse time honoured; longer ones are cut to it. */
#define UO_REUSE_MAX	(30u * 86400u)

/* Which fields of struct uo_settings a file (or the environment) set. */
#define UO_SET_THRESHOLD	0x01u
#define UO_SET_WINDOW		0x02u
#define UO_SET_GUARD		0x04u
#define UO_SET_REUSE		0x08u
#define UO_SET_ENABLE		0x10u

struct uo_settings {
	unsigned set;		/* UO_SET_* */
	uint64_t threshold;
	uint64_t window;
	unsigned guard;		/* UO_GUARD_* bits */
	uint32_t reuse_s;
	bool enable;
};

/* Later settings override earlier ones, field by field. */
void uo_settings_merge(struct uo_settings *into, const struct uo_settings *from);

/* Path rules: files under 'never' are left alone, under 'always' guarded. */
#define UO_RULES_MAX	32
#define UO_RULE_PATH	256

enum uo_rule_kind {
	UO_RULE_NONE = 0,	/* no rule matches */
	UO_RULE_NEVER,
	UO_RULE_ALWAYS,
};

struct uo_rule {
	uint16_t len;		/* strlen(path); "/" is kept as is */
	uint8_t kind;		/* enum uo_rule_kind */
	char path[UO_RULE_PATH]; /* absolute, no trailing '/', ~ expanded */
};

struct uo_rules {
	unsigned n;
	struct uo_rule rule[UO_RULES_MAX];
};

/*
 * The rule for an absolute path: the longest rule that is a whole-component
 * prefix of it, the later one on a tie.  UO_RULE_NONE if none is.
 */
enum uo_rule_kind uo_rules_match(const struct uo_rules *r, const char *path);
bool uo_rules_have(const struct uo_rules *r, enum uo_rule_kind kind);

/*
 * Value parsers, shared by the environment and the config files.  Each
 * returns NULL when the value is good (and stores it), else what is wrong
 * with it, in words that fit after "useonce: NAME=VALUE: ".
 */
const char *uo_parse_size(const char *s, uint64_t *out);	/* "32M", "8MiB", "1g" */
const char *uo_parse_size_setting(const char *s, uint64_t *out);	/* ... in range */
const char *uo_parse_guard(const char *s, unsigned *out);	/* read, write, both */
const char *uo_parse_reuse(const char *s, uint32_t *out);	/* 600, 90s, 10m, 2h */
const char *uo_parse_bool(const char *s, bool *out);		/* 1/0, yes/no, true/false, on/off */

/*
 * Where a trace or the statistics go: a descriptor or an absolute path.
 * 'one_is_stderr' reads "1" as "on, to stderr" (USEONCE_STATS) rather than
 * descriptor 1.  An empty value (and "0" for the statistics) is off:
 * *fd = -1, path "".
 */
const char *uo_parse_dest(const char *s, bool one_is_stderr, int *fd, char *path,
			  size_t path_size);

/* What the parser needs from its caller. */
struct uo_conf_ctx {
	const char *home;	/* what ~ stands for; NULL: rules with ~ are skipped */
	/* Does "[program NAME]" name the running program?  Asked once per section. */
	bool (*is_program)(void *arg, const char *name);
	/* Line 'line' is wrong: "KEY = VALUE: why" (key and value may be NULL). */
	void (*warn)(void *arg, unsigned line, const char *key, const char *value,
		     const char *why);
	void *arg;
};

/*
 * Parses one config file held in buf[0..len).  Global lines go to 'global',
 * lines of matching [program] sections to 'program' (the caller applies them
 * in that order); never/always lines of both are appended to 'rules' in file
 * order.  Every malformed line is reported once through ctx->warn and
 * skipped; the rest of the file still applies.
 */
#define UO_CONF_LINE_MAX	512
void uo_conf_parse(const char *buf, size_t len, const struct uo_conf_ctx *ctx,
		   struct uo_settings *global, struct uo_settings *program,
		   struct uo_rules *rules);

#endif /* UO_CONF_H */
