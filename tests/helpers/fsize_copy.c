/*
 * check_limits' copier: one copy_file_range of LEN MiB from IN to OUT (made
 * anew), as cp does; prints "ret N errno E".  Run under a file size limit.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int in, out;
	ssize_t r;

	if (argc != 4)
		return 2;
	/* As a shell started it: a write past the limit kills. */
	signal(SIGXFSZ, SIG_DFL);
	in = open(argv[1], O_RDONLY);
	out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (in < 0 || out < 0)
		return 2;
	errno = 0;
	r = copy_file_range(in, NULL, out, NULL, (size_t)atol(argv[3]) << 20, 0);
	printf("ret %zd errno %s\n", r, r < 0 ? strerror(errno) : "-");
	return 0;
}
