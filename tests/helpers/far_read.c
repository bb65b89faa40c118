/*
 * far_read FILE FROM_MIB MIB cursor|pread: reads MIB MiB of FILE from
 * FROM_MIB on, at the cursor (after one lseek) or with pread, in 1 MiB
 * calls.  Built 32-bit by check_offsets (with large-file support of its
 * own), to read past 4 GiB under a 32-bit libuseonce.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	long long from, at;
	long mib, i;
	int fd, positional;

	if (argc != 5 || (strcmp(argv[4], "cursor") && strcmp(argv[4], "pread"))) {
		fprintf(stderr, "usage: far_read FILE FROM_MIB MIB cursor|pread\n");
		return 2;
	}
	from = atoll(argv[2]) << 20;
	mib = atol(argv[3]);
	positional = !strcmp(argv[4], "pread");
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || (!positional && lseek(fd, (off_t)from, SEEK_SET) != (off_t)from)) {
		perror("far_read");
		return 2;
	}
	for (i = 0, at = from; i < mib; i++, at += sizeof(buf)) {
		ssize_t n = positional ? pread(fd, buf, sizeof(buf), (off_t)at) :
					 read(fd, buf, sizeof(buf));

		if (n != (ssize_t)sizeof(buf)) {
			perror("far_read: read");
			return 2;
		}
	}
	return close(fd) == 0 ? 0 : 2;
}
