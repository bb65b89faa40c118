/*
 * secure_probe FILE: what a program sees of itself and of a file it
 * streams, for check_secure.  Prints
 *
 *	secure 1
 *	preloaded 1
 *	read 67108864 fnv 0123456789abcdef
 *
 * secure is getauxval(AT_SECURE), as the loader set it; preloaded says
 * whether libuseonce.so is mapped; then FILE is read to its end in 1 MiB
 * read(2) calls and its size and FNV-1a are given.  Exit status 0 if the
 * file could be read.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static unsigned char buf[1 << 20];
	uint64_t fnv = 0xcbf29ce484222325ULL, total = 0;
	char line[512];
	FILE *maps;
	int fd, preloaded = 0;
	ssize_t n, i;

	if (argc != 2) {
		fprintf(stderr, "usage: secure_probe FILE\n");
		return 2;
	}
	printf("secure %lu\n", getauxval(AT_SECURE));
	maps = fopen("/proc/self/maps", "r");
	while (maps && fgets(line, sizeof(line), maps))
		preloaded |= strstr(line, "/libuseonce.so") != NULL;
	if (maps)
		fclose(maps);
	printf("preloaded %d\n", preloaded);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		printf("open %s\n", strerror(errno));
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i++)
			fnv = (fnv ^ buf[i]) * 0x100000001b3ULL;
		total += (uint64_t)n;
	}
	if (n < 0) {
		printf("read %s\n", strerror(errno));
		return 1;
	}
	printf("read %llu fnv %016llx\n", (unsigned long long)total, (unsigned long long)fnv);
	return close(fd) != 0;
}
