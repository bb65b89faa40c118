/*
 * The end of every Check program: run the suite, one line of totals, and an
 * exit status that says whether anything failed.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UOT_CHECK_H
#define UOT_CHECK_H

#include <check.h>
#include <stdbool.h>
#include <stdlib.h>

/*
 * Runs every suite of 'sr' and frees it.  in_process: no fork per test, so
 * a failed assertion still runs the teardown here.
 */
static inline int uot_check_runner(SRunner *sr, bool in_process)
{
	int failed;

	if (in_process)
		srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static inline int uot_check_run(Suite *s, bool in_process)
{
	return uot_check_runner(srunner_create(s), in_process);
}

#endif /* UOT_CHECK_H */
