/*
 * check_trees' writer of a tree that reads one of its files back: writes
 * N files of KIB KiB into DIR (f000, f001... made anew, 64 KiB a write),
 * as tar x does; just after closing file K it runs "cat DIR/fK" (another
 * process, as a build or a checksum would) and goes on.  Exits 0 if all
 * was written.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[64 * 1024];
	char path[4096], cmd[4200];
	unsigned n, kib, k, i, j;
	int fd;

	if (argc != 5)
		return 2;
	n = (unsigned)atoi(argv[2]);
	kib = (unsigned)atoi(argv[3]);
	k = (unsigned)atoi(argv[4]);
	for (i = 0; i < n; i++) {
		memset(buf, 'a' + (int)(i % 26), sizeof(buf));
		snprintf(path, sizeof(path), "%s/f%03u", argv[1], i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return 1;
		for (j = 0; j < kib / 64; j++)
			if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				return 1;
		if (close(fd) != 0)
			return 1;
		if (i == k) {
			/* A clock tick later: the read must be seen as after the write. */
			struct timespec ts = { 0, 20 * 1000 * 1000 };

			nanosleep(&ts, NULL);
			snprintf(cmd, sizeof(cmd), "cat '%s' >/dev/null", path);
			if (system(cmd) != 0)
				return 1;
		}
	}
	return 0;
}
