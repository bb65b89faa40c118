/*
 * Only the hooks are exported.  The library's dynamic symbol table (nm -D
 * --defined-only) must list exactly the names of preload/hooks.def's rows:
 * a helper that leaks out would interpose on every program's symbol of that
 * name, and a row that is not exported is a hook that never runs.
 *
 * Environment: UO_BUILD (default build), UO_SRCDIR (default .).
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "uot_check.h"

#define MAX_NAMES 256

static int name_index(char names[][64], int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

/*
 * Names of hooks.def's rows, read as text (the list the linker is given is
 * made from the same rows): each row starts in column 0 with "UO_HOOK(name, "
 * and then UO_TWIN(name64) or UO_ALONE; or with "UO_STUB(name)", a hook
 * written in assembly, exported on x86-64 only.
 */
static int hook_names(const char *path, char names[][64], int max)
{
	static const char row[] = "UO_HOOK(", twin[] = "UO_TWIN(", stub[] = "UO_STUB(";
	char line[512];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return -1;
	while (n + 1 < max && fgets(line, sizeof(line), f)) {
		const char *p = line + strlen(row);
		size_t len;

		if (!strncmp(line, stub, strlen(stub))) {
#if defined(__x86_64__)
			len = strcspn(p, " \t,)");
			if (len && len < 64) {
				memcpy(names[n], p, len);
				names[n++][len] = '\0';
			}
#endif
			continue;
		}
		if (strncmp(line, row, strlen(row)))
			continue;
		len = strcspn(p, " \t,)");
		if (!len || len >= 64)
			continue;
		memcpy(names[n], p, len);
		names[n++][len] = '\0';
		p = strchr(p, ',');
		if (!p)
			continue;
		p += 1 + strspn(p + 1, " \t");
		if (strncmp(p, twin, strlen(twin)))
			continue;
		p += strlen(twin);
		len = strcspn(p, " \t,)");
		if (len && len < 64) {
			memcpy(names[n], p, len);
			names[n++][len] = '\0';
		}
	}
	fclose(f);
	return n;
}

START_TEST(test_exports)
{
	static char hooks[MAX_NAMES][64], exported[MAX_NAMES][64];
	static const char *const required[] = { "read", "write", "close", "copy_file_range",
#if defined(__x86_64__)
						"vfork",
#endif
	};
	char def[PATH_MAX], cmd[PATH_MAX + 64], line[512];
	int nhooks, nexp = 0, i;
	FILE *nm;

	if (system("command -v nm >/dev/null 2>&1") != 0) {
		printf("exports: skipped: nm (binutils) is missing\n");
		return;
	}
	uot_sfmt(def, sizeof(def), "%s/preload/hooks.def", uot_srcdir());
	nhooks = hook_names(def, hooks, MAX_NAMES);
	ck_assert_msg(nhooks > 0, "cannot read hook names from %s (set UO_SRCDIR)", def);

	uot_sfmt(cmd, sizeof(cmd), "nm -D --defined-only '%s'", uot_library());
	nm = popen(cmd, "r");
	ck_assert_msg(nm != NULL, "cannot run %s", cmd);
	while (nexp < MAX_NAMES && fgets(line, sizeof(line), nm)) {
		char addr[64], type[8], name[256], *at;

		if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3)
			continue;
		at = strchr(name, '@');	/* a symbol version, if any */
		if (at)
			*at = '\0';
		uot_sfmt(exported[nexp++], 64, "%s", name);
	}
	ck_assert_msg(pclose(nm) == 0, "%s failed", cmd);
	printf("exports: %d names in hooks.def, %d exported\n", nhooks, nexp);

	for (i = 0; i < nexp; i++)
		ck_assert_msg(name_index(hooks, nhooks, exported[i]) >= 0,
			      "%s exports %s, which is not a row of hooks.def", uot_library(),
			      exported[i]);
	for (i = 0; i < nhooks; i++)
		ck_assert_msg(name_index(exported, nexp, hooks[i]) >= 0,
			      "hooks.def has %s but %s does not export it", hooks[i], uot_library());
	for (i = 0; i < (int)(sizeof(required) / sizeof(required[0])); i++)
		ck_assert_msg(name_index(exported, nexp, required[i]) >= 0,
			      "%s does not export %s", uot_library(), required[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("exports");
	TCase *tc = tcase_create("exports");

	tcase_add_test(tc, test_exports);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
