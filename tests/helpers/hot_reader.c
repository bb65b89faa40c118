/*
 * check_watch_keep's reader: reads FILE's first 8 MiB in 1 MiB calls,
 * pauses (the watcher attaches then), reads the rest as fast as it can,
 * pauses again with the descriptor still open, and exits.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	int fd, i;

	if (argc < 2 || (fd = open(argv[1], O_RDONLY)) < 0) {
		fprintf(stderr, "usage: hot_reader FILE\n");
		return 2;
	}
	for (i = 0; i < (argc > 2 ? atoi(argv[2]) : 8); i++)
		if (read(fd, buf, sizeof(buf)) <= 0)
			return 1;
	usleep(800 * 1000);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	usleep(500 * 1000);
	return 0;
}
