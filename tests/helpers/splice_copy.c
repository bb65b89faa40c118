/*
 * splice_copy SRC DST: copies a file through a pipe with splice(2), the way
 * pv and some servers move data, so the data never enters user space.
 * Both splices use the files' own offsets (NULL offset pointers): the
 * library must find the position from the file cursor.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A bigger pipe means fewer calls; the kernel may refuse and keep 64 KiB. */
#define PIPE_WANT	(1 << 20)

static void die(const char *what, const char *path)
{
	fprintf(stderr, "splice_copy: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	int in, out, p[2];
	long chunk;

	if (argc != 3) {
		fprintf(stderr, "usage: splice_copy SRC DST\n");
		return 2;
	}
	in = open(argv[1], O_RDONLY);
	if (in < 0)
		die("cannot open", argv[1]);
	out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0)
		die("cannot create", argv[2]);
	if (pipe(p) != 0)
		die("cannot make", "a pipe");
	chunk = fcntl(p[1], F_SETPIPE_SZ, PIPE_WANT);
	if (chunk <= 0)
		chunk = fcntl(p[1], F_GETPIPE_SZ);
	if (chunk <= 0)
		chunk = 65536;

	for (;;) {
		ssize_t n = splice(in, NULL, p[1], NULL, (size_t)chunk, SPLICE_F_MOVE);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("cannot splice from", argv[1]);
		if (n == 0)
			break;
		/* Drain the pipe completely before filling it again. */
		while (n > 0) {
			ssize_t m = splice(p[0], NULL, out, NULL, (size_t)n, SPLICE_F_MOVE);

			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0)
				die("cannot splice to", argv[2]);
			n -= m;
		}
	}
	if (close(out) != 0)
		die("cannot close", argv[2]);
	return 0;
}
