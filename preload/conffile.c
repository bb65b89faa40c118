/*
 * The config file format and the values of the environment variables,
 * parsed.  Pure: a buffer in, settings out, no system calls and no
 * globals, so it is unit-tested and fuzzed as it runs in the library.
 *
 * The format is line based, like git config:
 *
 *	# comment (also ';'), blank lines ok
 *	threshold = 32M		# global settings
 *	never = ~/.cache
 *	[program rsync]		# lines below apply to rsync only
 *	threshold = 8M
 *
 * A '#' or ';' at the start of a line or after a blank starts a comment.
 * Nothing is allocated: each line is copied into a buffer on the stack.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <sys/stat.h>

#include "conf.h"

static char uo_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool uo_strcaseeq(const char *a, const char *b)
{
	while (*a && uo_lower(*a) == uo_lower(*b)) {
		a++;
		b++;
	}
	return uo_lower(*a) == uo_lower(*b);
}

static bool uo_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* s starts with the word w (any case), then a blank. */
static bool uo_word(const char *s, const char *w)
{
	while (*w && uo_lower(*s) == *w) {
		s++;
		w++;
	}
	return !*w && uo_blank(*s);
}

#define UO_FIELD(f)	((uint16_t)offsetof(struct uo_settings, f))

const struct uo_setting uo_setting_table[UO_S_COUNT] = {
	/* USEONCE_DISABLE=0 turns on what a file's enable = no turned off. */
	[UO_S_DISABLE] = { "", USEONCE_ENV_DISABLE, UO_K_DISABLE, UO_FIELD(disabled),
			   "disable", 'n', UO_OPT_NONE, "1" },
	[UO_S_THRESHOLD] = { "threshold", USEONCE_ENV_THRESHOLD, UO_K_SIZE, UO_FIELD(threshold),
			     "threshold", 't', UO_OPT_NEEDED, "" },
	[UO_S_WINDOW] = { "window", USEONCE_ENV_WINDOW, UO_K_SIZE, UO_FIELD(window),
			  "window", 'w', UO_OPT_NEEDED, "" },
	[UO_S_GUARD] = { "guard", USEONCE_ENV_GUARD, UO_K_GUARD, UO_FIELD(guard),
			 "guard", 'g', UO_OPT_NEEDED, "" },
	[UO_S_REUSE] = { "reuse", USEONCE_ENV_REUSE, UO_K_REUSE, UO_FIELD(reuse_s),
			 "reuse", 'r', UO_OPT_NEEDED, "" },
	[UO_S_ENABLE] = { "enable", "", UO_K_BOOL, UO_FIELD(enable), "", 0, UO_OPT_NONE, "" },
	[UO_S_TRACE] = { "", USEONCE_ENV_TRACE, UO_K_DEST, UO_FIELD(trace),
			 "trace", 'T', UO_OPT_NEEDED, "" },
	[UO_S_STATS] = { "", USEONCE_ENV_STATS, UO_K_DEST_STATS, UO_FIELD(stats),
			 "stats", 's', UO_OPT_OPTIONAL, "stderr" },
	[UO_S_DRYRUN] = { "", USEONCE_ENV_DRYRUN, UO_K_BOOL, UO_FIELD(dryrun),
			  "dry-run", 'N', UO_OPT_NONE, "1" },
	[UO_S_CONFIG] = { "", USEONCE_ENV_CONFIG, UO_K_FILE, UO_FIELD(config),
			  "config", 'c', UO_OPT_NEEDED, "" },
	[UO_S_NEVER] = { "never", "", UO_K_NEVER, 0, "", 0, UO_OPT_NONE, "" },
	[UO_S_ALWAYS] = { "always", "", UO_K_ALWAYS, 0, "", 0, UO_OPT_NONE, "" },
};

/* A path copied by hand: a counted loop could become a call of libc's memcpy. */
static void uo_copy_dest(struct uo_dest *to, const struct uo_dest *from)
{
	size_t i;

	to->fd = from->fd;
	for (i = 0; from->path[i] && i + 1 < sizeof(to->path); i++)
		to->path[i] = from->path[i];
	to->path[i] = '\0';
}

const char *uo_setting_parse(const struct uo_setting *row, const char *value,
			     struct uo_settings *to)
{
	void *field = (char *)to + row->field;
	const char *why = NULL;
	struct uo_dest *dest;

	switch ((enum uo_setting_kind)row->kind) {
	case UO_K_SIZE:
		why = uo_parse_size_setting(value, field);
		break;
	case UO_K_GUARD:
		why = uo_parse_guard(value, field);
		break;
	case UO_K_REUSE:
		why = uo_parse_reuse(value, field);
		break;
	case UO_K_BOOL:
		why = uo_parse_bool(value, field);
		break;
	case UO_K_DISABLE:
		why = uo_parse_bool(value, &to->disabled);
		if (!why) {
			to->enable = !to->disabled;
			to->set |= UO_SET_ENABLE;
		}
		break;
	case UO_K_DEST:
	case UO_K_DEST_STATS:
		dest = field;
		why = !*value ? UO_EMPTY :
		      uo_parse_dest(value, row->kind == UO_K_DEST_STATS, &dest->fd, dest->path,
				    sizeof(dest->path));
		break;
	case UO_K_FILE:
		if (!*value)
			why = UO_EMPTY;
		else
			to->config = value;
		break;
	case UO_K_NEVER:
	case UO_K_ALWAYS:
		return "a path rule";
	}
	if (!why)
		to->set |= UO_SET((unsigned)(row - uo_setting_table));
	return why;
}

int uo_setting_env(const char *name, const char **value)
{
	unsigned i;

	for (i = 0; i < UO_S_COUNT; i++) {
		/* Every variable's name starts with the USEONCE_ the caller matched. */
		const char *p = uo_setting_table[i].env, *s = name;

		if (!p[0])
			continue;
		for (p += sizeof("USEONCE_") - 1; *p && *s == *p; p++, s++)
			;
		if (!*p && *s == '=') {
			*value = s + 1;
			return (int)i;
		}
	}
	return -1;
}

const char *uo_errno_words(int err)
{
	switch (err) {
	case ENOENT: return "no such file";
	case EACCES: return "permission denied";
	case ELOOP: return "a symbolic link loop";
	case EISDIR: return "a directory";
	case ENAMETOOLONG: return "name too long";
	case ENOTDIR: return "a path component is not a directory";
	default: return "cannot be read";
	}
}

const char *uo_conf_file_why(unsigned mode, unsigned uid, bool system)
{
	if (!S_ISREG(mode))
		return "not a regular file; ignored";
	if (system && (uid != 0 || (mode & (S_IWGRP | S_IWOTH))))
		return "not owned by root, or writable by group or others; ignored";
	return NULL;
}

const char *uo_private_dir_why(unsigned mode, unsigned uid, unsigned euid)
{
	if (!S_ISDIR(mode))
		return "not a directory";
	if (uid != euid)
		return "another user's";
	if (mode & 077)
		return "open to group or others (not mode 0700)";
	return NULL;
}

void uo_settings_merge(struct uo_settings *into, const struct uo_settings *from)
{
	unsigned i;

	for (i = 0; i < UO_S_COUNT; i++) {
		const struct uo_setting *row = &uo_setting_table[i];
		const void *src = (const char *)from + row->field;
		void *dst = (char *)into + row->field;

		if (!(from->set & UO_SET(i)))
			continue;
		switch ((enum uo_setting_kind)row->kind) {
		case UO_K_SIZE:
			*(uint64_t *)dst = *(const uint64_t *)src;
			break;
		case UO_K_GUARD:
			*(unsigned *)dst = *(const unsigned *)src;
			break;
		case UO_K_REUSE:
			*(uint32_t *)dst = *(const uint32_t *)src;
			break;
		case UO_K_BOOL:
		case UO_K_DISABLE:
			*(bool *)dst = *(const bool *)src;
			break;
		case UO_K_DEST:
		case UO_K_DEST_STATS:
			uo_copy_dest(dst, src);
			break;
		case UO_K_FILE:
			*(const char **)dst = *(const char *const *)src;
			break;
		case UO_K_NEVER:
		case UO_K_ALWAYS:
			break;
		}
	}
	into->set |= from->set;
}

/* "8M", "8MiB", "8388608", "1g": binary multiples, as dd and fincore read them. */
const char *uo_parse_size(const char *s, uint64_t *out)
{
	static const char bad[] = "not a size (try 32M)";
	uint64_t v = 0;
	unsigned shift = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return bad;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return "too big";
		v = v * 10 + (uint64_t)(*p - '0');
	}
	switch (*p) {
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	case 't': case 'T': shift = 40; p++; break;
	}
	if (shift && *p == 'i')
		p++;
	if (*p == 'B' || (shift && *p == 'b'))
		p++;
	if (*p)
		return bad;
	if (shift && v > (UINT64_MAX >> shift))
		return "too big";
	*out = v << shift;
	return NULL;
}

const char *uo_parse_size_setting(const char *s, uint64_t *out)
{
	const char *why;
	uint64_t v;

	why = uo_parse_size(s, &v);
	if (!why && (v < UO_SIZE_MIN || v > UO_SIZE_MAX))
		why = "out of range (2M..1P)";
	if (why)
		return why;
	*out = v;
	return NULL;
}

const char *uo_parse_guard(const char *s, unsigned *out)
{
	if (uo_streq(s, "read"))
		*out = UO_GUARD_READ;
	else if (uo_streq(s, "write"))
		*out = UO_GUARD_WRITE;
	else if (uo_streq(s, "both"))
		*out = UO_GUARD_READ | UO_GUARD_WRITE;
	else
		return "expected read, write or both";
	return NULL;
}

/* "600", "90s", "10m", "2h": seconds; 0 turns the record off. */
const char *uo_parse_reuse(const char *s, uint32_t *out)
{
	static const char bad[] = "expected seconds (600, 90s, 10m, 2h, 1d)";
	uint64_t v = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v >= 1000000000)
			return "too long (at most 30 days is kept)";
	}
	if (p == s)
		return bad;
	if (*p == 'm')
		v *= 60;
	else if (*p == 'h')
		v *= 3600;
	else if (*p == 'd')
		v *= 86400;
	else if (*p && *p != 's')
		return bad;
	if (*p && p[1])
		return bad;
	*out = (uint32_t)(v > UO_REUSE_MAX ? UO_REUSE_MAX : v);
	return NULL;
}

const char *uo_parse_bool(const char *s, bool *out)
{
	if (uo_streq(s, "1") || uo_strcaseeq(s, "yes") || uo_strcaseeq(s, "true") ||
	    uo_strcaseeq(s, "on"))
		*out = true;
	else if (uo_streq(s, "0") || uo_strcaseeq(s, "no") || uo_strcaseeq(s, "false") ||
		 uo_strcaseeq(s, "off"))
		*out = false;
	else
		return "expected 1 or 0 (yes or no)";
	return NULL;
}

const char *uo_parse_dest(const char *s, bool one_is_stderr, int *fd, char *path,
			  size_t path_size)
{
	uint64_t v = 0;
	const char *p;
	size_t n;

	if (!*s || (one_is_stderr && uo_streq(s, "0"))) {
		*fd = -1;
		path[0] = '\0';
		return NULL;
	}
	if (uo_streq(s, "stderr") || (one_is_stderr && uo_streq(s, "1"))) {
		*fd = 2;
		path[0] = '\0';
		return NULL;
	}
	if (*s >= '0' && *s <= '9') {
		for (p = s; *p >= '0' && *p <= '9' && v < (1u << 20); p++)
			v = v * 10 + (uint64_t)(*p - '0');
		if (*p || v >= (1u << 20))
			return "not a descriptor number";
		*fd = (int)v;
		path[0] = '\0';
		return NULL;
	}
	if (*s != '/')
		return "expected stderr, a descriptor number or an absolute path";
	n = uo_strlen(s);
	if (n >= path_size)
		return "path too long";
	for (n = 0; s[n]; n++)
		path[n] = s[n];
	path[n] = '\0';
	*fd = -1;
	return NULL;
}

bool uo_rules_have(const struct uo_rules *r, enum uo_rule_kind kind)
{
	unsigned i;

	for (i = 0; i < r->n; i++)
		if (r->rule[i].kind == kind)
			return true;
	return false;
}

enum uo_rule_kind uo_rules_match(const struct uo_rules *r, const char *path)
{
	enum uo_rule_kind kind = UO_RULE_NONE;
	size_t best = 0;
	unsigned i;

	if (!path || path[0] != '/')
		return UO_RULE_NONE;
	for (i = 0; i < r->n && i < UO_RULES_MAX; i++) {
		const struct uo_rule *rule = &r->rule[i];
		size_t k;

		for (k = 0; k < rule->len && path[k] == rule->path[k]; k++)
			;
		if (k < rule->len)
			continue;
		/* Whole components: /media matches /media/x, not /mediax. */
		if (path[k] != '/' && path[k] != '\0' && !(rule->len == 1 && rule->path[0] == '/'))
			continue;
		if (rule->len >= best) {
			best = rule->len;
			kind = (enum uo_rule_kind)rule->kind;
		}
	}
	return kind;
}

/* The parser's state while it walks a file. */
struct uo_conf_state {
	const struct uo_conf_ctx *ctx;
	struct uo_settings *global;
	struct uo_settings *program;
	struct uo_rules *rules;
	struct uo_settings *into;	/* where lines go now; NULL: a section not for us */
	unsigned line;
};

static void uo_conf_warn(struct uo_conf_state *cs, const char *key, const char *value,
			 const char *why)
{
	if (cs->ctx->warn)
		cs->ctx->warn(cs->ctx->arg, cs->line, key, value, why);
}

/* "~/x" or "~" with HOME, an absolute path otherwise, trailing '/' removed. */
/* Is a component of this absolute path "." or ".."? */
static bool uo_dot_component(const char *path)
{
	const char *p;

	for (p = path; *p; p++)
		if (p[0] == '/' && p[1] == '.' &&
		    (p[2] == '/' || !p[2] || (p[2] == '.' && (p[3] == '/' || !p[3]))))
			return true;
	return false;
}

static void uo_conf_rule(struct uo_conf_state *cs, const char *key, const char *value,
			 enum uo_rule_kind kind)
{
	const char *home = "", *rest = value;
	struct uo_rule *rule;
	size_t n = 0, i;

	if (value[0] == '~' && (value[1] == '/' || value[1] == '\0')) {
		home = cs->ctx->home;
		if (!home || home[0] != '/') {
			/* Documented: such rules are skipped without a word. */
			return;
		}
		rest = value + 1;
	} else if (value[0] != '/') {
		uo_conf_warn(cs, key, value, "not an absolute path (or ~/...)");
		return;
	}
	if (cs->rules->n >= UO_RULES_MAX) {
		uo_conf_warn(cs, key, value, "too many path rules (32 at most)");
		return;
	}
	if (uo_strlen(home) + uo_strlen(rest) >= UO_RULE_PATH) {
		uo_conf_warn(cs, key, value, "path too long");
		return;
	}
	rule = &cs->rules->rule[cs->rules->n];
	for (i = 0; home[i]; i++)
		rule->path[n++] = home[i];
	for (i = 0; rest[i]; i++) {
		/* "//" is one separator, as the kernel reads paths. */
		if (rest[i] == '/' && n && rule->path[n - 1] == '/')
			continue;
		rule->path[n++] = rest[i];
	}
	while (n > 1 && rule->path[n - 1] == '/')
		n--;
	rule->path[n] = '\0';
	/*
	 * Paths are matched against what the kernel says a descriptor names,
	 * which never has "." or ".." in it: such a rule could never match.
	 */
	if (uo_dot_component(rule->path)) {
		uo_conf_warn(cs, key, value, "has a . or .. component (write the path plainly)");
		return;
	}
	rule->len = (uint16_t)n;
	rule->kind = (uint8_t)kind;
	cs->rules->n++;
}

/* The row of a config file key, any case; NULL if there is none. */
static const struct uo_setting *uo_setting_key(const char *key)
{
	unsigned i;

	for (i = 0; i < UO_S_COUNT; i++)
		if (uo_setting_table[i].key[0] && uo_strcaseeq(key, uo_setting_table[i].key))
			return &uo_setting_table[i];
	return NULL;
}

static void uo_conf_setting(struct uo_conf_state *cs, char *key, char *value)
{
	const struct uo_setting *row = uo_setting_key(key);
	struct uo_settings unused;
	const char *why;

	if (!row) {
		uo_conf_warn(cs, key, NULL,
			     "unknown key (threshold, window, guard, reuse, enable, never, always)");
		return;
	}
	if (row->kind == UO_K_NEVER || row->kind == UO_K_ALWAYS) {
		if (!*value)
			uo_conf_warn(cs, key, value, "no path");
		else if (cs->into)
			uo_conf_rule(cs, key, value,
				     row->kind == UO_K_NEVER ? UO_RULE_NEVER : UO_RULE_ALWAYS);
		return;
	}
	/* A section for another program: its values are checked all the same. */
	why = uo_setting_parse(row, value, cs->into ? cs->into : &unused);
	if (why)
		uo_conf_warn(cs, key, value, why);
}

/* "[program NAME]" or "[program "NAME"]". */
static void uo_conf_section(struct uo_conf_state *cs, char *s)
{
	char *end = s + uo_strlen(s) - 1, *name;

	cs->into = NULL;
	if (*end != ']') {
		uo_conf_warn(cs, NULL, NULL, "a section line must end with ']'");
		return;
	}
	*end = '\0';
	s++;
	while (uo_blank(*s))
		s++;
	if (!uo_word(s, "program")) {
		uo_conf_warn(cs, NULL, NULL, "unknown section (only [program NAME]); its lines are ignored");
		return;
	}
	name = s + 7;
	while (uo_blank(*name))
		name++;
	end = name + uo_strlen(name);
	while (end > name && uo_blank(end[-1]))
		*--end = '\0';
	if (end - name >= 2 && name[0] == '"' && end[-1] == '"') {
		*--end = '\0';
		name++;
	}
	if (!*name) {
		uo_conf_warn(cs, NULL, NULL, "[program] without a name; its lines are ignored");
		return;
	}
	if (cs->ctx->is_program && cs->ctx->is_program(cs->ctx->arg, name))
		cs->into = cs->program;
}

/* One line, NUL-terminated, in a buffer of ours. */
static void uo_conf_line(struct uo_conf_state *cs, char *s)
{
	char *key, *value, *end, *p;

	/* Comments: at the start, or after a blank (paths may hold '#'). */
	for (p = s; *p; p++) {
		if ((*p == '#' || *p == ';') && (p == s || uo_blank(p[-1]))) {
			*p = '\0';
			break;
		}
	}
	while (uo_blank(*s))
		s++;
	end = s + uo_strlen(s);
	while (end > s && uo_blank(end[-1]))
		*--end = '\0';
	if (!*s)
		return;
	if (*s == '[') {
		uo_conf_section(cs, s);
		return;
	}
	for (p = s; *p && *p != '='; p++)
		;
	if (!*p) {
		uo_conf_warn(cs, NULL, NULL, "expected KEY = VALUE");
		return;
	}
	*p = '\0';
	key = s;
	value = p + 1;
	while (p > key && uo_blank(p[-1]))
		*--p = '\0';
	while (uo_blank(*value))
		value++;
	if (!*key) {
		uo_conf_warn(cs, NULL, NULL, "no key before '='");
		return;
	}
	if (value[0] == '"' && end - value >= 2 && end[-1] == '"') {
		end[-1] = '\0';
		value++;
	}
	uo_conf_setting(cs, key, value);
}

void uo_conf_parse(const char *buf, size_t len, const struct uo_conf_ctx *ctx,
		   struct uo_settings *global, struct uo_settings *program,
		   struct uo_rules *rules)
{
	struct uo_conf_state cs = {
		.ctx = ctx, .global = global, .program = program, .rules = rules,
		.into = global, .line = 0,
	};
	char line[UO_CONF_LINE_MAX];
	size_t at = 0;

	while (at < len) {
		size_t n = 0;
		bool nul = false, long_ = false;

		cs.line++;
		for (; at < len && buf[at] != '\n'; at++) {
			if (buf[at] == '\0')
				nul = true;
			if (n + 1 < sizeof(line))
				line[n++] = buf[at];
			else
				long_ = true;
		}
		at++;	/* the newline */
		line[n] = '\0';
		if (long_)
			uo_conf_warn(&cs, NULL, NULL, "line too long (511 bytes at most)");
		else if (nul)
			uo_conf_warn(&cs, NULL, NULL, "not text (a NUL byte)");
		else
			uo_conf_line(&cs, line);
	}
}
