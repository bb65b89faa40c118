/*
 * The config file and value parsers on their own (preload/conffile.c, pure):
 * sizes, values, [program] sections, never/always path rules, malformed
 * lines (one warning each, the rest applies), too many rules, the
 * shipped examples/useonce.conf, and what makes a private directory.  No
 * library, no files but the example: microseconds.  Settings reaching real programs are check_config's; the
 * fuzz target (tests/fuzz) runs the same parsers on arbitrary input.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "uot_check.h"
#include "conf.h"

/* Paths here are short: far below PATH_MAX. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define MAX_WARN 64

struct warned {
	unsigned n;
	unsigned line[MAX_WARN];
	char text[MAX_WARN][160];
};

static void warn_cb(void *arg, unsigned line, const char *key, const char *value, const char *why)
{
	struct warned *w = arg;

	if (w->n < MAX_WARN) {
		w->line[w->n] = line;
		snprintf(w->text[w->n], sizeof(w->text[0]), "%s = %s: %s", key ? key : "-",
			 value ? value : "-", why);
	}
	w->n++;
}

static bool is_rsync(void *arg, const char *name)
{
	return !strcmp(name, "rsync") || !strcmp(name, "/usr/bin/rsync");
}

static struct uo_rules rules;

static void parse(const char *text, const char *home, struct warned *w,
		  struct uo_settings *g, struct uo_settings *p)
{
	struct uo_conf_ctx ctx = { .home = home, .is_program = is_rsync, .warn = warn_cb, .arg = w };

	memset(w, 0, sizeof(*w));
	memset(g, 0, sizeof(*g));
	memset(p, 0, sizeof(*p));
	memset(&rules, 0, sizeof(rules));
	uo_conf_parse(text, strlen(text), &ctx, g, p, &rules);
}

START_TEST(test_sizes)
{
	static const struct { const char *s; uint64_t v; } good[] = {
		{ "0", 0 }, { "4096", 4096 }, { "8M", 8ULL << 20 }, { "8MiB", 8ULL << 20 },
		{ "8MB", 8ULL << 20 }, { "1g", 1ULL << 30 }, { "2T", 2ULL << 40 },
		{ "64k", 64ULL << 10 }, { "12B", 12 },
	};
	static const char *const bad[] = {
		"", "-1", "abc", "8Q", "8 M", "M", "99999999999999999999999", "20000000T",
		"1.5G", " 8M", "8M ",
	};
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = 1;
		ck_assert_msg(uo_parse_size(good[i].s, &v) == NULL, "\"%s\" refused", good[i].s);
		ck_assert_msg(v == good[i].v, "\"%s\" read as %llu", good[i].s, (unsigned long long)v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		ck_assert_msg(uo_parse_size(bad[i], &v) != NULL, "\"%s\" accepted", bad[i]);
		ck_assert_uint_eq(v, 7);
	}
	/* Settings: a folio at least, 1 PiB at most. */
	ck_assert_ptr_nonnull(uo_parse_size_setting("1M", &v));
	ck_assert_ptr_nonnull(uo_parse_size_setting("2P", &v));
	ck_assert_ptr_nonnull(uo_parse_size_setting("1025T", &v));
	ck_assert_ptr_null(uo_parse_size_setting("2M", &v));
	ck_assert_uint_eq(v, 2ULL << 20);
	ck_assert_ptr_null(uo_parse_size_setting("1024T", &v));
}
END_TEST

START_TEST(test_values)
{
	unsigned g = 0;
	uint32_t r = 5;
	bool b = false;
	int fd = 9;
	char path[32] = "x";

	ck_assert_ptr_null(uo_parse_guard("read", &g));
	ck_assert_uint_eq(g, UO_GUARD_READ);
	ck_assert_ptr_null(uo_parse_guard("both", &g));
	ck_assert_uint_eq(g, UO_GUARD_READ | UO_GUARD_WRITE);
	ck_assert_ptr_nonnull(uo_parse_guard("", &g));
	ck_assert_ptr_nonnull(uo_parse_guard("reads", &g));

	ck_assert_ptr_null(uo_parse_reuse("600", &r));
	ck_assert_uint_eq(r, 600);
	ck_assert_ptr_null(uo_parse_reuse("90s", &r));
	ck_assert_uint_eq(r, 90);
	ck_assert_ptr_null(uo_parse_reuse("10m", &r));
	ck_assert_uint_eq(r, 600);
	ck_assert_ptr_null(uo_parse_reuse("2h", &r));
	ck_assert_uint_eq(r, 7200);
	ck_assert_ptr_null(uo_parse_reuse("0", &r));
	ck_assert_uint_eq(r, 0);
	ck_assert_ptr_null(uo_parse_reuse("999d", &r));
	ck_assert_uint_eq(r, UO_REUSE_MAX);
	r = 5;
	ck_assert_ptr_nonnull(uo_parse_reuse("", &r));
	ck_assert_ptr_nonnull(uo_parse_reuse("-1", &r));
	ck_assert_ptr_nonnull(uo_parse_reuse("10x", &r));
	ck_assert_ptr_nonnull(uo_parse_reuse("10mm", &r));
	ck_assert_ptr_nonnull(uo_parse_reuse("99999999999999", &r));
	ck_assert_uint_eq(r, 5);

	ck_assert_ptr_null(uo_parse_bool("yes", &b));
	ck_assert(b);
	ck_assert_ptr_null(uo_parse_bool("0", &b));
	ck_assert(!b);
	ck_assert_ptr_nonnull(uo_parse_bool("2", &b));
	ck_assert_ptr_nonnull(uo_parse_bool("", &b));

	ck_assert_ptr_null(uo_parse_dest("stderr", false, &fd, path, sizeof(path)));
	ck_assert_int_eq(fd, 2);
	ck_assert_ptr_null(uo_parse_dest("1", false, &fd, path, sizeof(path)));
	ck_assert_int_eq(fd, 1);
	ck_assert_ptr_null(uo_parse_dest("1", true, &fd, path, sizeof(path)));
	ck_assert_int_eq(fd, 2);
	ck_assert_ptr_null(uo_parse_dest("0", true, &fd, path, sizeof(path)));
	ck_assert_int_eq(fd, -1);
	ck_assert_ptr_null(uo_parse_dest("/tmp/x", true, &fd, path, sizeof(path)));
	ck_assert_int_eq(fd, -1);
	ck_assert_str_eq(path, "/tmp/x");
	ck_assert_ptr_null(uo_parse_dest("", true, &fd, path, sizeof(path)));
	ck_assert_str_eq(path, "");
	ck_assert_ptr_nonnull(uo_parse_dest("rel", true, &fd, path, sizeof(path)));
	ck_assert_ptr_nonnull(uo_parse_dest("-1", true, &fd, path, sizeof(path)));
	ck_assert_ptr_nonnull(uo_parse_dest("99999999999", true, &fd, path, sizeof(path)));
	ck_assert_ptr_nonnull(uo_parse_dest("/a/path/longer/than/thirty/two/bytes", true, &fd,
					    path, sizeof(path)));
}
END_TEST

START_TEST(test_sections)
{
	struct uo_settings g, p;
	struct warned w;

	parse("# a comment\n"
	      "  threshold = 16M   # inline comment\n"
	      "window=4MiB\n"
	      "; another comment\n"
	      "\n"
	      "Guard = \"read\"\n"
	      "[program other]\n"
	      "threshold = 2M\n"
	      "[ program rsync ]\n"
	      "threshold = 8M\n"
	      "reuse = 2h\n"
	      "[program \"/usr/bin/rsync\"]\n"
	      "enable = no\n"
	      "[program postgres]\n"
	      "window = 2M\n", NULL, &w, &g, &p);
	ck_assert_msg(w.n == 0, "unexpected warning: %s", w.text[0]);
	ck_assert_uint_eq(g.set, UO_SET_THRESHOLD | UO_SET_WINDOW | UO_SET_GUARD);
	ck_assert_uint_eq(g.threshold, 16ULL << 20);
	ck_assert_uint_eq(g.window, 4ULL << 20);
	ck_assert_uint_eq(g.guard, UO_GUARD_READ);
	ck_assert_uint_eq(p.set, UO_SET_THRESHOLD | UO_SET_REUSE | UO_SET_ENABLE);
	ck_assert_uint_eq(p.threshold, 8ULL << 20);
	ck_assert_uint_eq(p.reuse_s, 7200);
	ck_assert(!p.enable);

	/* The program's lines win over the file's global ones. */
	struct uo_settings all = { 0 };

	uo_settings_merge(&all, &g);
	uo_settings_merge(&all, &p);
	ck_assert_uint_eq(all.threshold, 8ULL << 20);
	ck_assert_uint_eq(all.window, 4ULL << 20);
}
END_TEST

START_TEST(test_malformed)
{
	static const unsigned expect[] = { 2, 3, 4, 5, 8, 10, 11, 12, 14 };
	char text[2048], longline[700];
	struct uo_settings g, p;
	struct warned w;
	size_t i;

	memset(longline, 'x', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	snprintf(text, sizeof(text),
		 "threshold = 16M\n"		/* 1 */
		 "window 8M\n"			/* 2: no '=' */
		 "colour = blue\n"		/* 3: unknown key */
		 "guard = sideways\n"		/* 4: bad value */
		 "[section]\n"			/* 5: unknown section */
		 "threshold = 4M\n"		/* 6: in it: ignored, no word */
		 "[program rsync]\n"		/* 7 */
		 "= 3\n"			/* 8: no key */
		 "reuse = 2h\n"			/* 9 */
		 "%s\n"				/* 10: too long */
		 "never = relative/path\n"	/* 11: not absolute */
		 "window =\n"			/* 12: empty value */
		 "enable = no\n"		/* 13 */
		 "[program rsync",		/* 14: no ']', and no newline at the end */
		 longline);
	parse(text, NULL, &w, &g, &p);
	for (i = 0; i < w.n && i < MAX_WARN; i++)
		printf("config: malformed: line %u: %s\n", w.line[i], w.text[i]);
	ck_assert_uint_eq(w.n, sizeof(expect) / sizeof(expect[0]));
	for (i = 0; i < w.n; i++)
		ck_assert_uint_eq(w.line[i], expect[i]);
	/* The rest still applies. */
	ck_assert_uint_eq(g.set, UO_SET_THRESHOLD);
	ck_assert_uint_eq(g.threshold, 16ULL << 20);
	ck_assert_uint_eq(p.set, UO_SET_REUSE | UO_SET_ENABLE);
	ck_assert_uint_eq(p.reuse_s, 7200);
	ck_assert_uint_eq(rules.n, 0);

	/* A NUL byte makes its line, and only it, wrong. */
	memset(&w, 0, sizeof(w));
	memset(&g, 0, sizeof(g));
	{
		static const char bin[] = "window = 4M\nthre\0shold = 8M\nthreshold = 6M\n";
		struct uo_conf_ctx ctx = { .warn = warn_cb, .arg = &w };

		uo_conf_parse(bin, sizeof(bin) - 1, &ctx, &g, &p, &rules);
	}
	ck_assert_uint_eq(w.n, 1);
	ck_assert_uint_eq(w.line[0], 2);
	ck_assert_uint_eq(g.threshold, 6ULL << 20);
	ck_assert_uint_eq(g.window, 4ULL << 20);
}
END_TEST

START_TEST(test_rules)
{
	struct uo_settings g, p;
	struct warned w;

	parse("never = /data\n"
	      "always = /data/media/\n"
	      "never = /data/media/cache//\n"
	      "always = ~/films\n"
	      "never = ~\n"
	      "[program rsync]\n"
	      "always = /data\n"		/* same length as the first: the later wins */
	      "[program other]\n"
	      "always = /srv\n", "/home/u", &w, &g, &p);
	ck_assert_msg(w.n == 0, "unexpected warning: %s", w.text[0]);
	ck_assert_uint_eq(rules.n, 6);
	ck_assert_str_eq(rules.rule[1].path, "/data/media");
	ck_assert_str_eq(rules.rule[2].path, "/data/media/cache");
	ck_assert_str_eq(rules.rule[3].path, "/home/u/films");
	ck_assert_str_eq(rules.rule[4].path, "/home/u");
	ck_assert_int_eq(uo_rules_match(&rules, "/data/x"), UO_RULE_ALWAYS);
	ck_assert_int_eq(uo_rules_match(&rules, "/data"), UO_RULE_ALWAYS);
	ck_assert_int_eq(uo_rules_match(&rules, "/database/x"), UO_RULE_NONE);
	ck_assert_int_eq(uo_rules_match(&rules, "/data/media/film.mkv"), UO_RULE_ALWAYS);
	ck_assert_int_eq(uo_rules_match(&rules, "/data/media/cache/f"), UO_RULE_NEVER);
	ck_assert_int_eq(uo_rules_match(&rules, "/data/media/cachex"), UO_RULE_ALWAYS);
	ck_assert_int_eq(uo_rules_match(&rules, "/home/u/films/a"), UO_RULE_ALWAYS);
	ck_assert_int_eq(uo_rules_match(&rules, "/home/u/.cache/a"), UO_RULE_NEVER);
	ck_assert_int_eq(uo_rules_match(&rules, "/home/user/a"), UO_RULE_NONE);
	ck_assert_int_eq(uo_rules_match(&rules, "/srv/a"), UO_RULE_NONE);
	ck_assert_int_eq(uo_rules_match(&rules, "relative"), UO_RULE_NONE);
	ck_assert_int_eq(uo_rules_match(&rules, ""), UO_RULE_NONE);

	/* "/" covers everything, as the shortest rule. */
	parse("always = /\nnever = /tmp\n", NULL, &w, &g, &p);
	ck_assert_int_eq(uo_rules_match(&rules, "/usr/x"), UO_RULE_ALWAYS);
	ck_assert_int_eq(uo_rules_match(&rules, "/tmp/x"), UO_RULE_NEVER);

	/* The kernel names files without . or ..: such rules warn and are dropped. */
	parse("never = /a/../b\nnever = /a/.\nalways = ~/./x\nnever = /a/..b\nnever = /.x/y.\n",
	      "/home/u", &w, &g, &p);
	ck_assert_uint_eq(w.n, 3);
	ck_assert_uint_eq(w.line[0], 1);
	ck_assert_uint_eq(w.line[1], 2);
	ck_assert_uint_eq(w.line[2], 3);
	ck_assert_uint_eq(rules.n, 2);
	ck_assert_str_eq(rules.rule[0].path, "/a/..b");
	ck_assert_str_eq(rules.rule[1].path, "/.x/y.");

	/* Without HOME, rules with ~ are skipped, silently (documented). */
	parse("never = ~/.cache\nnever = /x\n", NULL, &w, &g, &p);
	ck_assert_uint_eq(w.n, 0);
	ck_assert_uint_eq(rules.n, 1);
	ck_assert_str_eq(rules.rule[0].path, "/x");
}
END_TEST

START_TEST(test_too_many_rules)
{
	char text[4096];
	struct uo_settings g, p;
	struct warned w;
	size_t n = 0;
	int i;

	for (i = 0; i < UO_RULES_MAX + 8; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "never = /r%d\n", i);
	parse(text, NULL, &w, &g, &p);
	ck_assert_uint_eq(rules.n, UO_RULES_MAX);
	ck_assert_uint_eq(w.n, 8);
	ck_assert_uint_eq(w.line[0], UO_RULES_MAX + 1);
	ck_assert_int_eq(uo_rules_match(&rules, "/r31/x"), UO_RULE_NEVER);
	ck_assert_int_eq(uo_rules_match(&rules, "/r32/x"), UO_RULE_NONE);
}
END_TEST

/*
 * The settings table: every variable is found by its name, every key is
 * named in the unknown key warning, every option sets a variable, and a
 * setting parsed through the table lands in its field and merges.
 */
START_TEST(test_table)
{
	struct uo_settings g, p, all;
	struct warned w;
	char entry[64];
	const char *value;
	unsigned i;

	parse("no-such-key = 1\n", NULL, &w, &g, &p);
	ck_assert_uint_eq(w.n, 1);
	for (i = 0; i < UO_S_COUNT; i++) {
		const struct uo_setting *row = &uo_setting_table[i];

		if (row->env[0]) {
			ck_assert_msg(!strncmp(row->env, "USEONCE_", 8), "%s", row->env);
			snprintf(entry, sizeof(entry), "%s=v%u", row->env + 8, i);
			ck_assert_int_eq(uo_setting_env(entry, &value), (int)i);
			ck_assert_str_eq(value, entry + strlen(row->env + 8) + 1);
		}
		if (row->key[0])
			ck_assert_msg(strstr(w.text[0], row->key), "'%s' not named in: %s",
				      row->key, w.text[0]);
		if (row->opt[0])
			ck_assert_msg(row->env[0] && row->opt_short, "option --%s sets nothing",
				      row->opt);
	}
	ck_assert_int_eq(uo_setting_env("THRESHOLDX=1", &value), -1);
	ck_assert_int_eq(uo_setting_env("THRESHOLD", &value), -1);

	memset(&g, 0, sizeof(g));
	memset(&all, 0, sizeof(all));
	ck_assert_ptr_null(uo_setting_parse(&uo_setting_table[UO_S_TRACE], "/t", &g));
	ck_assert_ptr_null(uo_setting_parse(&uo_setting_table[UO_S_STATS], "1", &g));
	ck_assert_ptr_null(uo_setting_parse(&uo_setting_table[UO_S_DISABLE], "yes", &g));
	ck_assert_ptr_nonnull(uo_setting_parse(&uo_setting_table[UO_S_WINDOW], "1", &g));
	ck_assert_str_eq(uo_setting_parse(&uo_setting_table[UO_S_TRACE], "", &g), UO_EMPTY);
	ck_assert_uint_eq(g.set, UO_SET_TRACE | UO_SET_STATS | UO_SET_DISABLE | UO_SET_ENABLE);
	uo_settings_merge(&all, &g);
	ck_assert_str_eq(all.trace.path, "/t");
	ck_assert_int_eq(all.trace.fd, -1);
	ck_assert_int_eq(all.stats.fd, 2);
	ck_assert(all.disabled && !all.enable);
	ck_assert_uint_eq(all.set, g.set);
}
END_TEST

/*
 * The private directory (the record, the note of warnings): the user's own
 * directory with no bits for group or others, nothing else.  The library
 * and useonce --check both judge by this.
 */
START_TEST(test_private_dir)
{
	static const struct {
		unsigned mode, uid;
		bool ok;
	} c[] = {
		{ S_IFDIR | 0700, 1000, true },
		{ S_IFDIR | 01700, 1000, true },	/* sticky: still private */
		{ S_IFDIR | 0500, 1000, true },
		{ S_IFDIR | 0700, 0, false },		/* root's, for user 1000 */
		{ S_IFDIR | 0700, 1001, false },
		{ S_IFDIR | 0710, 1000, false },
		{ S_IFDIR | 0701, 1000, false },
		{ S_IFDIR | 0702, 1000, false },
		{ S_IFDIR | 0770, 1000, false },
		{ S_IFDIR | 01777, 1000, false },	/* as /tmp */
		{ S_IFREG | 0700, 1000, false },
		{ S_IFLNK | 0777, 1000, false },
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *why = uo_private_dir_why(c[i].mode, c[i].uid, 1000);

		ck_assert_msg(!why == c[i].ok, "mode %o uid %u: %s", c[i].mode, c[i].uid,
			      why ? why : "taken");
	}
	ck_assert_ptr_null(uo_private_dir_why(S_IFDIR | 0700, 0, 0));
	ck_assert_str_eq(uo_private_dir_why(S_IFDIR | 0700, 0, 1000), "another user's");
}
END_TEST

/*
 * examples/useonce.conf documents the format: with its settings uncommented
 * ("#key = value" and "#[program NAME]" lines), it must parse without a
 * warning, and set what it shows.
 */
START_TEST(test_example)
{
	const char *src = getenv("UO_SRCDIR");
	static char text[65536], out[65536];
	struct uo_settings g, p;
	struct warned w;
	char path[PATH_MAX];
	size_t len, i, n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/examples/useonce.conf", src && *src ? src : ".");
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot read %s (set UO_SRCDIR)", path);
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[len] = '\0';
	for (i = 0; i < len; i++) {
		bool line_start = i == 0 || text[i - 1] == '\n';

		/* "#key = ..." and "#[program": a setting shown commented out. */
		if (line_start && text[i] == '#' &&
		    (text[i + 1] == '[' || (text[i + 1] >= 'a' && text[i + 1] <= 'z' &&
					     strcspn(text + i, "\n") > strcspn(text + i, "="))))
			continue;
		out[n++] = text[i];
	}
	out[n] = '\0';
	parse(out, "/home/u", &w, &g, &p);
	ck_assert_msg(w.n == 0, "%s: line %u: %s", path, w.line[0], w.text[0]);
	ck_assert_uint_eq(g.set, UO_SET_THRESHOLD | UO_SET_WINDOW | UO_SET_GUARD | UO_SET_REUSE |
				 UO_SET_ENABLE);
	ck_assert_uint_eq(g.threshold, USEONCE_DEFAULT_THRESHOLD);
	ck_assert_uint_eq(g.window, USEONCE_DEFAULT_WINDOW);
	ck_assert_uint_eq(g.reuse_s, USEONCE_DEFAULT_REUSE);
	ck_assert_uint_eq(rules.n, 2);
	ck_assert_int_eq(uo_rules_match(&rules, "/home/u/.cache/x"), UO_RULE_NEVER);
	ck_assert_int_eq(uo_rules_match(&rules, "/media/disk/film"), UO_RULE_ALWAYS);
	/* rsync is our stand-in program: its section applies. */
	ck_assert_uint_eq(p.threshold, 8ULL << 20);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conffile");
	TCase *tc = tcase_create("parser");

	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_sections);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_rules);
	tcase_add_test(tc, test_too_many_rules);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_private_dir);
	tcase_add_test(tc, test_example);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
