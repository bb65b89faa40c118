/*
 * Tuning from the environment, read once by the constructor.
 *
 * Bad values never stop the program: each gets one "useonce:" line on
 * stderr and its default is used.  In secure mode (setuid programs, or the
 * loader told so) the environment belongs to someone else and is not read.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "uo_internal.h"

/* Statically initialised: hooks that run before the constructor see the defaults. */
struct uo_config uo_config = {
	.tuning = UO_TUNING_DEFAULTS,
	.disabled = false,
	.trace_fd = -1,
	.trace_path = "",
	.reuse_s = USEONCE_DEFAULT_REUSE,
	.record_path = "",
};

/* a then b into out, which the caller made big enough (libc's memcpy would cost a symbol version). */
static void uo_copy(char *out, const char *a, const char *b)
{
	while (*a)
		*out++ = *a++;
	while (*b)
		*out++ = *b++;
	*out = '\0';
}

/* "8M", "8MiB", "8388608", "1g": binary multiples, as dd and fincore read them. */
static bool uo_parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
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
	if (*p || (shift && v > (UINT64_MAX >> shift)))
		return false;
	*out = v << shift;
	return true;
}

static void uo_load_size(const char *name, const char *s, uint64_t low, uint64_t *value)
{
	uint64_t v;

	if (!uo_parse_size(s, &v))
		uo_warn(name, s, "not a size (try 32M); using the default");
	else if (v < low || v > (1ULL << 50))
		uo_warn(name, s, "out of range (2M..1P); using the default");
	else
		*value = v;
}

static void uo_load_disable(const char *s)
{
	if (!*s || !strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "false"))
		return;
	if (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "true"))
		uo_config.disabled = true;
	else
		uo_warn(USEONCE_ENV_DISABLE, s, "expected 1 or 0; guarding stays on");
}

static void uo_load_guard(const char *s)
{
	if (!strcmp(s, "read"))
		uo_config.tuning.guard = UO_GUARD_READ;
	else if (!strcmp(s, "write"))
		uo_config.tuning.guard = UO_GUARD_WRITE;
	else if (!strcmp(s, "both"))
		uo_config.tuning.guard = UO_GUARD_READ | UO_GUARD_WRITE;
	else
		uo_warn(USEONCE_ENV_GUARD, s, "expected read, write or both; guarding both");
}

static void uo_load_trace(const char *s)
{
	uint64_t fd;

	if (!*s)
		return;
	if (!strcmp(s, "stderr"))
		uo_config.trace_fd = 2;
	else if (uo_parse_size(s, &fd) && s[strspn(s, "0123456789")] == '\0' && fd < UO_FDTAB_MAX)
		uo_config.trace_fd = (int)fd;
	else if (s[0] == '/' && strlen(s) < sizeof(uo_config.trace_path))
		uo_copy(uo_config.trace_path, s, "");
	else
		uo_warn(USEONCE_ENV_TRACE, s,
			"expected stderr, a descriptor number or an absolute path; not tracing");
}

/*
 * "USEONCE_WINDOW=8M" -> "8M" if 'entry' sets 'name', else NULL.  By hand:
 * this runs for every variable of every process started, and each libc
 * function the constructor calls costs a symbol lookup at first call.
 */
static const char *uo_after(const char *s, const char *prefix)
{
	while (*prefix && *s == *prefix) {
		s++;
		prefix++;
	}
	return *prefix ? NULL : s;
}

static const char *uo_value(const char *entry, const char *name)
{
	const char *rest = uo_after(entry, name);

	return rest && *rest == '=' ? rest + 1 : NULL;
}

/* "600", "90s", "10m", "2h": seconds; 0 turns the record off. */
static void uo_load_reuse(const char *s)
{
	uint64_t v = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9' && v < 1000000000; p++)
		v = v * 10 + (uint64_t)(*p - '0');
	if (p != s && *p == 'm' && !p[1])
		v *= 60;
	else if (p != s && *p == 'h' && !p[1])
		v *= 3600;
	else if (p == s || (*p && (*p != 's' || p[1])) || v >= 1000000000) {
		uo_warn(USEONCE_ENV_REUSE, s, "expected seconds (600, 10m, 2h); using 10m");
		return;
	}
	uo_config.reuse_s = (uint32_t)(v > 30 * 86400 ? 30 * 86400 : v);
}

/*
 * The record of recent streams lives in the user's runtime directory
 * (per user, private, on tmpfs: gone at logout).  Without one, no record.
 */
static void uo_load_record_path(const char *dir)
{
	static const char name[] = "/useonce-streams";
	size_t len = 0;

	/* Counted by hand: a first call of strlen costs a symbol lookup in every process. */
	while (dir[len] && len < sizeof(uo_config.record_path))
		len++;
	if (dir[0] != '/' || len + sizeof(name) > sizeof(uo_config.record_path))
		return;
	uo_copy(uo_config.record_path, dir, name);
}

void uo_config_load(void)
{
	struct uo_tuning *t = &uo_config.tuning;
	char **env;
	const char *v;

	if (!environ)
		return;
	/*
	 * One pass over the environment: this runs in every process started.
	 * Secure mode is asked about only when there is something to ignore.
	 */
	for (env = environ; *env; env++) {
		if ((*env)[0] == 'X' && (v = uo_value(*env, "XDG_RUNTIME_DIR")))
			uo_load_record_path(v);
		if ((*env)[0] != 'U' || !uo_after(*env, "USEONCE_"))
			continue;
		if (getauxval(AT_SECURE))
			return;
		if ((v = uo_value(*env, USEONCE_ENV_DISABLE)))
			uo_load_disable(v);
		else if ((v = uo_value(*env, USEONCE_ENV_WINDOW)))
			uo_load_size(USEONCE_ENV_WINDOW, v, t->align, &t->window);
		else if ((v = uo_value(*env, USEONCE_ENV_THRESHOLD)))
			uo_load_size(USEONCE_ENV_THRESHOLD, v, t->align, &t->threshold);
		else if ((v = uo_value(*env, USEONCE_ENV_GUARD)))
			uo_load_guard(v);
		else if ((v = uo_value(*env, USEONCE_ENV_TRACE)))
			uo_load_trace(v);
		else if ((v = uo_value(*env, USEONCE_ENV_REUSE)))
			uo_load_reuse(v);
	}
	/* Advice is given in whole folios, and a stream is at least one window. */
	if (t->window % t->align)
		t->window += t->align - t->window % t->align;
	if (t->threshold < t->window)
		t->threshold = t->window;
}
