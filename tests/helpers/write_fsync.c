/*
 * write_fsync FILE MIB [HOW]: writes MIB MiB to FILE in 1 MiB write(2)
 * calls, then syncs and closes it, and prints what each step returned:
 *
 *	write 96 ok
 *	fsync -1 EIO
 *	close 0 ok
 *
 * HOW is fsync (the default) or fdatasync; or reopen: close without a
 * sync, then open the file again and fsync that descriptor.  An error no
 * one has seen yet is reported to a descriptor opened after it, so a
 * library that consumed it while closing (waiting on writeback the wrong
 * way) shows here as an fsync that succeeds.
 *
 * Exit status 0 only if every step succeeded.  The failing-disk tests
 * compare this report with and without libuseonce: an error the kernel
 * reports to the program must still reach it under the library.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *name(int err)
{
	switch (err) {
	case 0: return "ok";
	case EIO: return "EIO";
	case ENOSPC: return "ENOSPC";
	case EROFS: return "EROFS";
	case EDQUOT: return "EDQUOT";
	default: return strerror(err);
	}
}

int main(int argc, char **argv)
{
	static char block[1 << 20];
	long mib, done = 0;
	int fd, err = 0, ret, failed = 0;

	const char *how = argc > 3 ? argv[3] : "fsync";

	if (argc < 3 || argc > 4 || (mib = atol(argv[2])) <= 0 || (strcmp(how, "fsync") &&
	    strcmp(how, "fdatasync") && strcmp(how, "reopen"))) {
		fprintf(stderr, "usage: write_fsync FILE MIB [fsync|fdatasync|reopen]\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "write_fsync: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	memset(block, 0x5a, sizeof(block));
	for (; done < mib; done++) {
		ssize_t n = write(fd, block, sizeof(block));

		if (n != (ssize_t)sizeof(block)) {
			err = n < 0 ? errno : ENOSPC;
			break;
		}
	}
	printf("write %ld %s\n", done, name(err));
	failed |= err != 0;
	if (!strcmp(how, "reopen")) {
		errno = 0;
		ret = close(fd);
		printf("close %d %s\n", ret, name(ret ? errno : 0));
		failed |= ret != 0;
		fd = open(argv[1], O_WRONLY);
		if (fd < 0) {
			printf("reopen -1 %s\n", name(errno));
			return 1;
		}
	}
	errno = 0;
	ret = !strcmp(how, "fdatasync") ? fdatasync(fd) : fsync(fd);
	printf("%s %d %s\n", how[0] == 'r' ? "fsync" : how, ret, name(ret ? errno : 0));
	failed |= ret != 0;
	errno = 0;
	ret = close(fd);
	printf("close %d %s\n", ret, name(ret ? errno : 0));
	failed |= ret != 0;
	return failed;
}
