/*
 * Tuning from the config files and the environment, read once by the
 * constructor.  Lowest to highest: built-in defaults, the system file
 * (SYSCONFDIR/useonce.conf), the user's file ($XDG_CONFIG_HOME/useonce/config,
 * else ~/.config/useonce/config, or $USEONCE_CONFIG), the environment.
 *
 * This runs in every process started, most of which never stream: with no
 * config file it costs one failed open per file and one pass over the
 * environment.  No malloc, no stdio, raw system calls only (our own read
 * and close hooks stay out of it), fixed-size static storage.
 *
 * Bad values never stop the program: each gets one "useonce:" line on
 * stderr and is ignored.  In secure mode (setuid programs, or the loader
 * told so) the environment and the user's file belong to someone else:
 * only the system file is read.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "config.h"
#include "sys.h"
#include "trace.h"
#include "userdir.h"

_Static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64");

#ifndef UO_SYSCONFDIR
#define UO_SYSCONFDIR "/etc"
#endif

/* Statically initialised: hooks that run before the constructor see the defaults. */
struct uo_config uo_config = {
	.tuning = UO_TUNING_DEFAULTS,
	.disabled = false,
	.trace = { .fd = -1 },
	.reuse_s = USEONCE_DEFAULT_REUSE,
	.runtime_dir = "",
	.tmp_dir = "",
	.stats = { .fd = -1 },
};

/* Path rules of both files; zero-filled, touched only when a file has some. */
struct uo_rules uo_rules;

/* A config file's text: only the constructor uses it, before threads exist. */
static char uo_conf_text[UO_CONF_SIZE];

/* Who we are, for [program NAME] sections; found only if a file has one. */
static struct {
	char *const *argv;
	char exe[512];
	bool looked;
} uo_self;

/*
 * What was ignored, said in one line at the end: a bad value set for a whole
 * session would otherwise print a line per variable in every command run.
 * The first problem is shown in full, the others named; `useonce --check`
 * lists them all with their reasons.
 */
#define UO_NAMED_MAX	16
static struct {
	struct uo_line first;
	unsigned n;
	struct {
		const char *name;	/* a variable, or a file; lives until the line is said */
		unsigned line;		/* of the file; 0: none */
	} named[UO_NAMED_MAX];
} uo_ignored;

/* Called once uo_ignored.n counts this one, the first being shown in full. */
static void uo_name_more(const char *name, unsigned line)
{
	unsigned i = uo_ignored.n - 2;

	if (i < UO_NAMED_MAX) {
		uo_ignored.named[i].name = name;
		uo_ignored.named[i].line = line;
	}
}

static void uo_problem(const char *what, const char *value, const char *why)
{
	if (uo_ignored.n++ == 0)
		uo_line_warning(&uo_ignored.first, what, value, why);
	else
		uo_name_more(what, 0);
}

static void uo_problem_at(const char *file, unsigned line, const char *key, const char *value,
			  const char *why)
{
	if (uo_ignored.n++ == 0)
		uo_line_warning_at(&uo_ignored.first, file, line, key, value, why);
	else
		uo_name_more(file, line);
}

/* "...; 3 more ignored: USEONCE_GUARD, /etc/useonce.conf:4,7 (useonce --check says why)" */
static void uo_say_ignored(void)
{
	static const char tail[] = " (useonce --check says why)";
	struct uo_line *l = &uo_ignored.first;
	struct uo_said_note note;
	int saved = errno;	/* we are in the constructor: leave errno as it was */
	unsigned i, more = uo_ignored.n - 1;

	if (!uo_ignored.n)
		return;
	if (more) {
		uo_line_str(l, "; ");
		uo_line_num(l, more);
		uo_line_str(l, " more ignored: ");
		for (i = 0; i < more && i < UO_NAMED_MAX; i++) {
			const char *name = uo_ignored.named[i].name;
			unsigned line = uo_ignored.named[i].line;
			/* Lines of one file: "FILE:4,7". */
			bool same = i && line && uo_ignored.named[i - 1].line &&
				    uo_streq(name, uo_ignored.named[i - 1].name);

			/* Room for this name, a line number and the tail, else cut short. */
			if (l->len + (same ? 0 : uo_strlen(name)) + 14 + sizeof(tail) > sizeof(l->buf)) {
				uo_line_str(l, "...");
				break;
			}
			if (same) {
				uo_line_str(l, ",");
			} else {
				if (i)
					uo_line_str(l, ", ");
				uo_line_path(l, name);
				if (line)
					uo_line_str(l, ":");
			}
			if (line)
				uo_line_num(l, line);
		}
		if (i == UO_NAMED_MAX && more > UO_NAMED_MAX)
			uo_line_str(l, "...");
		uo_line_str(l, tail);
	}
	/* Once per session where it goes (userdir.c): the same line again would be noise. */
	if (!uo_said_in_session(l->buf, l->len, &note))
		uo_said_done(&note, uo_line_write(l, STDERR_FILENO));
	errno = saved;
}

/* a then b into out, which the caller made big enough (libc's memcpy would cost a symbol version). */
static void uo_copy(char *out, const char *a, const char *b)
{
	while (*a)
		*out++ = *a++;
	while (*b)
		*out++ = *b++;
	*out = '\0';
}

static const char *uo_basename(const char *path)
{
	const char *base = path;

	for (; *path; path++)
		if (*path == '/' && path[1])
			base = path + 1;
	return base;
}

/*
 * [program NAME]: NAME with a '/' is the executable's absolute path;
 * without, the basename of the executable (/proc/self/exe) or of argv[0]
 * (a link such as vi -> vim.basic, a multi-call binary).  Scripts are
 * known by their interpreter's name.
 */
static bool uo_is_program(void *arg, const char *name)
{
	if (!uo_self.looked) {
		long n = uo_sys(SYS_readlinkat, AT_FDCWD, (long)"/proc/self/exe", (long)uo_self.exe,
				(long)sizeof(uo_self.exe) - 1);

		uo_self.exe[n > 0 ? n : 0] = '\0';
		uo_self.looked = true;
	}
	for (const char *p = name; *p; p++) {
		if (*p == '/')
			return uo_self.exe[0] && uo_streq(uo_self.exe, name);
	}
	if (uo_self.exe[0] && uo_streq(uo_basename(uo_self.exe), name))
		return true;
	return uo_self.argv && uo_self.argv[0] && uo_streq(uo_basename(uo_self.argv[0]), name);
}

/*
 * Secure mode (setuid, or the loader told so): asked only when there is
 * something to ignore, so most processes never pay for the call.
 */
static int uo_secure_mode = -1;

static bool uo_secure(void)
{
	if (uo_secure_mode < 0)
		uo_secure_mode = getauxval(AT_SECURE) != 0;
	return uo_secure_mode;
}

const char *uo_program_name(void)
{
	if (uo_self.argv && uo_self.argv[0] && uo_self.argv[0][0])
		return uo_basename(uo_self.argv[0]);
	return "?";
}

static void uo_file_warn(void *arg, unsigned line, const char *key, const char *value,
			 const char *why)
{
	uo_problem_at((const char *)arg, line, key, value, why);
}

/*
 * One file into 'into' (its global lines, then its matching [program]
 * sections), its rules appended to uo_rules.  A missing file is one failed
 * open, and silent unless the user named it.
 */
static void uo_load_file(const char *path, bool system, bool named, const char *home,
			 struct uo_settings *into)
{
	struct uo_conf_ctx ctx = {
		.home = home, .is_program = uo_is_program, .warn = uo_file_warn,
		.arg = (void *)path,
	};
	/* Static, as the text: only fields whose bit is set are read, so clearing 'set' will do. */
	static struct uo_settings global, program;
	size_t len = 0, i;
	const char *why;
	struct uo_file st;
	long fd;

	/* O_NONBLOCK: a FIFO put in its place must not hang every program. */
	fd = uo_sys(SYS_openat, AT_FDCWD, (long)path,
		    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);
	if (fd < 0) {
		if (named)
			uo_problem(USEONCE_ENV_CONFIG, path, uo_errno_words((int)-fd));
		else if (fd != -ENOENT)
			uo_problem_at(path, 0, NULL, NULL, uo_errno_words((int)-fd));
		return;
	}
	why = uo_fstat((int)fd, &st) != 0 ? "not a regular file; ignored" :
	      uo_conf_file_why(st.mode, st.uid, system);
	if (why) {
		uo_problem_at(path, 0, NULL, NULL, why);
		goto out;
	}
	for (;;) {
		long n = uo_sys(SYS_read, fd, (long)(uo_conf_text + len),
				(long)(sizeof(uo_conf_text) - len), 0);

		if (n == -EINTR)
			continue;
		if (n < 0) {
			uo_problem_at(path, 0, NULL, NULL, "cannot be read; ignored");
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == sizeof(uo_conf_text)) {
			char more;

			if (uo_sys(SYS_read, fd, (long)&more, 1, 0) > 0) {
				uo_problem_at(path, 0, NULL, NULL,
					   "longer than 32 KiB; the rest is ignored");
				/* The last line is cut: leave it out. */
				while (len && uo_conf_text[len - 1] != '\n')
					len--;
			}
			break;
		}
	}
	/* In secure mode HOME is someone else's: rules with ~ are skipped. */
	for (i = 0; i < len && home; i++) {
		if (uo_conf_text[i] == '~') {
			if (uo_secure())
				ctx.home = NULL;
			break;
		}
	}
	global.set = program.set = 0;
	uo_conf_parse(uo_conf_text, len, &ctx, &global, &program, &uo_rules);
	uo_settings_merge(into, &global);
	uo_settings_merge(into, &program);
out:
	uo_sys(SYS_close, fd, 0, 0, 0);
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

/*
 * Where the user's private directory may be (userdir.c chooses, and only
 * when there is something to keep): an absolute path that fits, else none.
 */
static void uo_load_dir(char *out, size_t size, const char *dir)
{
	size_t len = 0;

	/* Counted by hand: a first call of strlen costs a symbol lookup in every process. */
	while (dir[len] && len < size)
		len++;
	if (dir[0] != '/' || len >= size)
		return;
	uo_copy(out, dir, "");
}

/* The variables we read, found in one pass over the environment. */
struct uo_env {
	const char *v[UO_S_COUNT];	/* by row of uo_setting_table */
	const char *home;
	const char *xdg_config;
	bool any;		/* some USEONCE_ variable is set */
};

static void uo_env_scan(struct uo_env *e)
{
	char **env;
	const char *v;
	int i;

	for (env = environ; *env; env++) {
		const char *s = *env;

		switch (s[0]) {
		case 'X':
			if ((v = uo_value(s, "XDG_RUNTIME_DIR")))
				uo_load_dir(uo_config.runtime_dir, sizeof(uo_config.runtime_dir), v);
			else if ((v = uo_value(s, "XDG_CONFIG_HOME")))
				e->xdg_config = v;
			break;
		case 'T':
			if ((v = uo_value(s, "TMPDIR")))
				uo_load_dir(uo_config.tmp_dir, sizeof(uo_config.tmp_dir), v);
			break;
		case 'H':
			if ((v = uo_value(s, "HOME")))
				e->home = v;
			break;
		case 'U':
			if (!(v = uo_after(s, "USEONCE_")))
				break;
			e->any = true;
			i = uo_setting_env(v, &v);
			if (i >= 0)
				e->v[i] = v;
			break;
		}
	}
}

/* The user's file: $USEONCE_CONFIG, else under XDG_CONFIG_HOME or HOME. */
static void uo_load_user_file(const struct uo_env *e, struct uo_settings *into)
{
	static char path[512];
	const char *named = e->v[UO_S_CONFIG];

	if (named && !*named)
		uo_problem(USEONCE_ENV_CONFIG, named, UO_EMPTY);
	if (named && *named) {
		if (uo_strlen(named) >= sizeof(path)) {
			uo_problem(USEONCE_ENV_CONFIG, named, "path too long; ignored");
			return;
		}
		uo_copy(path, named, "");
		uo_load_file(path, false, true, e->home, into);
		return;
	}
	if (e->xdg_config && e->xdg_config[0] == '/' &&
	    uo_strlen(e->xdg_config) + sizeof("/useonce/config") <= sizeof(path))
		uo_copy(path, e->xdg_config, "/useonce/config");
	else if (e->home && e->home[0] == '/' &&
		 uo_strlen(e->home) + sizeof("/.config/useonce/config") <= sizeof(path))
		uo_copy(path, e->home, "/.config/useonce/config");
	else
		return;
	/*
	 * Secure mode is asked about only when there is something to ignore:
	 * most processes have HOME and no file, and pay one failed access.
	 */
	if (uo_sys(SYS_faccessat, AT_FDCWD, (long)path, F_OK, 0) != 0 || uo_secure())
		return;
	uo_load_file(path, false, false, e->home, into);
}

/* Each bad value: one line naming it, and the value it would have replaced stays. */
static void uo_load_env(const struct uo_env *e, struct uo_settings *into)
{
	const char *why;
	unsigned i;

	for (i = 0; i < UO_S_COUNT; i++) {
		/* USEONCE_CONFIG named the user's file, read before. */
		if (!e->v[i] || i == UO_S_CONFIG)
			continue;
		why = uo_setting_parse(&uo_setting_table[i], e->v[i], into);
		if (why)
			uo_problem(uo_setting_table[i].env, e->v[i], why);
	}
}

/* A destination into the config's fd and path (of the same size). */
void uo_config_load(char *const *argv)
{
	static const char system_file[] = UO_SYSCONFDIR "/useonce.conf";
	struct uo_tuning *t = &uo_config.tuning;
	/* Static: the constructor runs before threads exist, and nothing is zeroed on the stack. */
	static struct uo_settings set;
	struct uo_env e = { 0 };

	set.threshold = t->threshold;
	set.window = t->window;
	set.guard = t->guard;
	set.reuse_s = uo_config.reuse_s;
	set.enable = true;

	uo_self.argv = argv;
	if (environ)
		uo_env_scan(&e);
	uo_load_file(system_file, true, false, e.home, &set);
	if (!(e.any && uo_secure())) {
		uo_load_user_file(&e, &set);
		uo_load_env(&e, &set);
	}
	t->threshold = set.threshold;
	t->window = set.window;
	t->guard = set.guard;
	uo_config.reuse_s = set.reuse_s;
	if (set.set & UO_SET_DISABLE)
		uo_config.disabled = set.disabled;
	if (set.set & UO_SET_TRACE)
		uo_config.trace = set.trace;
	if (set.set & UO_SET_STATS)
		uo_config.stats = set.stats;
	if (set.set & UO_SET_DRYRUN)
		uo_config.dryrun = set.dryrun;
	if (!set.enable) {
		/* enable = no: only files under an always rule, if any, are guarded. */
		if (uo_rules_have(&uo_rules, UO_RULE_ALWAYS))
			uo_config.only_always = true;
		else
			uo_config.disabled = true;
	}
	/* Advice is given in whole folios, and a stream is at least one window. */
	if (t->window % t->align)
		t->window += t->align - t->window % t->align;
	if (t->threshold < t->window)
		t->threshold = t->window;
	/* A descriptor we write to must stay the one the user meant. */
	if (!uo_config.disabled) {
		uo_dest_keep(&uo_config.trace);
		uo_dest_keep(&uo_config.stats);
		uo_stderr_keep();
	}
	uo_say_ignored();
	/* The constructor (hooks.c) starts the statistics once this has read where they go. */
}
