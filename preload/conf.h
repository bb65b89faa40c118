/*
 * The settings table, the config file and environment value parsers
 * (conffile.c): text in, settings out.  Pure C: no system calls, no globals, no allocation, so the
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

/*
 * Every setting, once: its key in a config file, its environment variable,
 * its parser, where it lands in struct uo_settings, and the useonce
 * command's option for it.  The environment, the config files and the
 * command all go through this table (uo_setting_table in conffile.c), so
 * a setting is spelled, checked and stored the same way wherever it comes
 * from.  Rows are in the order the environment's warnings are printed.
 */
enum uo_setting_id {
	UO_S_DISABLE,		/* USEONCE_DISABLE, --disable */
	UO_S_THRESHOLD,		/* threshold, USEONCE_THRESHOLD, --threshold */
	UO_S_WINDOW,		/* window, USEONCE_WINDOW, --window */
	UO_S_GUARD,		/* guard, USEONCE_GUARD, --guard */
	UO_S_REUSE,		/* reuse, USEONCE_REUSE, --reuse */
	UO_S_ENABLE,		/* enable (files only; the environment says USEONCE_DISABLE) */
	UO_S_TRACE,		/* USEONCE_TRACE, --trace */
	UO_S_STATS,		/* USEONCE_STATS, --stats */
	UO_S_DRYRUN,		/* USEONCE_DRYRUN, --dry-run */
	UO_S_CONFIG,		/* USEONCE_CONFIG, --config */
	UO_S_NEVER,		/* never (files only) */
	UO_S_ALWAYS,		/* always (files only) */
	UO_S_COUNT
};

/* The parsers, by what they read. */
enum uo_setting_kind {
	UO_K_SIZE,		/* uint64_t: a size in range, uo_parse_size_setting */
	UO_K_GUARD,		/* unsigned: UO_GUARD_* bits, uo_parse_guard */
	UO_K_REUSE,		/* uint32_t: seconds, uo_parse_reuse */
	UO_K_BOOL,		/* bool, uo_parse_bool */
	UO_K_DISABLE,		/* bool, uo_parse_bool; also sets enable to its opposite */
	UO_K_DEST,		/* struct uo_dest, uo_parse_dest: a trace */
	UO_K_DEST_STATS,	/* struct uo_dest, uo_parse_dest reading "1" as stderr */
	UO_K_FILE,		/* const char *: a config file's name */
	UO_K_NEVER,		/* a path rule: files only, kept in struct uo_rules */
	UO_K_ALWAYS,
};

/* The option takes no value, needs one, may have one: getopt's has_arg. */
#define UO_OPT_NONE	0
#define UO_OPT_NEEDED	1
#define UO_OPT_OPTIONAL	2

/* Arrays, not pointers: the library's copy of the table needs no relocation. */
struct uo_setting {
	char key[10];		/* in a config file, any case; "" for none */
	char env[20];		/* the environment variable; "" for none */
	uint8_t kind;		/* enum uo_setting_kind */
	uint16_t field;		/* offsetof(struct uo_settings, ...) */
	/* The command's option: --opt, -opt_short; opt_value if given without one. */
	char opt[10];
	char opt_short;
	uint8_t opt_arg;	/* UO_OPT_* */
	char opt_value[8];
};

extern const struct uo_setting uo_setting_table[UO_S_COUNT];

/* Which fields of struct uo_settings a file (or the environment) set: a bit per row. */
#define UO_SET(id)		(1u << (id))
#define UO_SET_DISABLE		UO_SET(UO_S_DISABLE)
#define UO_SET_THRESHOLD	UO_SET(UO_S_THRESHOLD)
#define UO_SET_WINDOW		UO_SET(UO_S_WINDOW)
#define UO_SET_GUARD		UO_SET(UO_S_GUARD)
#define UO_SET_REUSE		UO_SET(UO_S_REUSE)
#define UO_SET_ENABLE		UO_SET(UO_S_ENABLE)
#define UO_SET_TRACE		UO_SET(UO_S_TRACE)
#define UO_SET_STATS		UO_SET(UO_S_STATS)
#define UO_SET_DRYRUN		UO_SET(UO_S_DRYRUN)
#define UO_SET_CONFIG		UO_SET(UO_S_CONFIG)

/*
 * Where a trace or the statistics go: a descriptor (-1: none) or a path
 * ("": none).  The library makes a descriptor its own at start (trace.c):
 * dev and ino say which file it named then.
 */
struct uo_dest {
	int fd;
	char path[256];
	uint64_t dev, ino;
};

/* Fields whose bit is not in 'set' are not read: nobody need clear them. */
struct uo_settings {
	unsigned set;		/* UO_SET_* */
	uint64_t threshold;
	uint64_t window;
	unsigned guard;		/* UO_GUARD_* bits */
	uint32_t reuse_s;
	bool enable;
	bool disabled;		/* USEONCE_DISABLE: off even under an always rule */
	bool dryrun;
	struct uo_dest trace;
	struct uo_dest stats;
	const char *config;	/* USEONCE_CONFIG: read instead of the user's file */
};

/*
 * Parses 'value' for a row and stores it in 'to', setting the row's bit.
 * NULL if the value was good, else what is wrong with it, as the value
 * parsers below say it.  Path rules are not parsed here (uo_conf_parse).
 */
const char *uo_setting_parse(const struct uo_setting *row, const char *value,
			     struct uo_settings *to);

/*
 * "THRESHOLD=8M", what follows USEONCE_ in an environment entry: the row
 * of the variable (and *value points at "8M"), or -1 if we read no such
 * variable.
 */
int uo_setting_env(const char *name, const char **value);

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

/* An empty value is a mistake more often than a way of saying "off". */
#define UO_EMPTY "empty (unset it instead)"

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
/* A config file is read up to this; the rest of it is ignored with a word. */
#define UO_CONF_SIZE		(32u * 1024u)
void uo_conf_parse(const char *buf, size_t len, const struct uo_conf_ctx *ctx,
		   struct uo_settings *global, struct uo_settings *program,
		   struct uo_rules *rules);

/*
 * Why a config file with this st_mode and owner is not read (the system's
 * file must be root's and writable only by root), NULL if it is; and a
 * file that cannot be opened, in words.  Messages fit "useonce: FILE: ".
 */
const char *uo_conf_file_why(unsigned mode, unsigned uid, bool system);
const char *uo_errno_words(int err);

/*
 * Why a directory with this st_mode and owner, opened without following a
 * link, cannot be the user's private directory (the record of streams and
 * the note of warnings said, userdir.c), NULL if it can: a directory of the
 * effective user 'euid' with no permission bits for group or others.  The
 * library and `useonce --check` judge by it alike.
 */
const char *uo_private_dir_why(unsigned mode, unsigned uid, unsigned euid);

/*
 * String helpers of the library's start-up, which runs in every process:
 * written out, and bounded, so that the compiler makes no call of strlen
 * or strcmp of them (the first call of a libc function costs the process
 * a symbol lookup).  Every string they see is shorter than the bound.
 */
#define UO_STRLEN_MAX	4096

static inline size_t uo_strlen(const char *s)
{
	size_t n = 0;

	while (s[n] && n < UO_STRLEN_MAX)
		n++;
	return n;
}

static inline bool uo_streq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

#endif /* UO_CONF_H */
