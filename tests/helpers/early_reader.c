/*
 * early_reader: a library whose constructor reads a whole file with read(2)
 * and closes it, as libselinux does in cp and ffmpeg's libraries do.  When
 * preloaded after libuseonce (LD_PRELOAD="libuseonce.so early_reader.so")
 * its constructor runs first, so libuseonce's hooks are called before its
 * own constructor has resolved anything.  The test checks that the data
 * read is right and that the program then runs normally.
 *
 *	UOT_EARLY_READ=FILE	the file to read
 *	UOT_EARLY_REPORT=FILE	where to write "bytes=N fnv=HEX"
 *
 * Built as a shared object (-shared -fPIC -DUOT_EARLY_READER_LIB).  Built
 * without that macro it is a program doing the same read before main.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A fixed descriptor, so a trace shows which lines are ours. */
#define EARLY_FD	77

static char early_buf[1 << 20];

static void early_report(const char *path, const char *line)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return;
	/* A short or failed write leaves a report the test rejects. */
	n = write(fd, line, strlen(line));
	(void)n;
	close(fd);
}

__attribute__((constructor)) static void early_read(void)
{
	const char *path = getenv("UOT_EARLY_READ");
	const char *report = getenv("UOT_EARLY_REPORT");
	uint64_t bytes = 0, fnv = 0xcbf29ce484222325ULL;
	char line[96];
	ssize_t n;
	int fd;

	if (!path || !report)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		early_report(report, "error=open\n");
		return;
	}
	if (fd != EARLY_FD && dup2(fd, EARLY_FD) == EARLY_FD) {
		close(fd);
		fd = EARLY_FD;
	}
	while ((n = read(fd, early_buf, sizeof(early_buf))) > 0) {
		ssize_t i;

		for (i = 0; i < n; i++) {
			fnv ^= (unsigned char)early_buf[i];
			fnv *= 0x100000001b3ULL;
		}
		bytes += (uint64_t)n;
	}
	if (close(fd) != 0 || n < 0) {
		early_report(report, "error=read\n");
		return;
	}
	snprintf(line, sizeof(line), "bytes=%llu fnv=%016llx\n",
		 (unsigned long long)bytes, (unsigned long long)fnv);
	early_report(report, line);
}

#ifndef UOT_EARLY_READER_LIB
int main(void)
{
	return 0;
}
#endif
