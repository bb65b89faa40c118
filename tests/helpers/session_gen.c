/*
 * session_gen: the whole-session battery's input data, made from a seed so
 * that two runs of the battery start from the same bytes without a network
 * or a fixture in the repository.
 *
 *	session_gen lines SEED COUNT	COUNT lines of words and numbers on stdout
 *	session_gen bytes SEED SIZE	SIZE pseudo-random bytes on stdout (K/M suffix)
 *	session_gen tree SEED DIR COUNT	COUNT files in DIR/dNN/, mostly text: a few
 *					bytes to a few MiB, a third of 64-256 KiB
 *
 * The lines repeat words and keys (sort -u, uniq -c have work to do); the
 * tree's sizes cover small files, the many-small-files range of the guard
 * and files above a lowered stream threshold.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK	(64 * 1024)

static const char *const words[] = {
	"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
	"india", "juliett", "kilo", "lima", "mike", "november", "oscar", "papa",
	"quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray",
	"yankee", "zulu", "page", "cache", "stream", "window", "folio", "cursor",
};
#define NWORDS	(sizeof(words) / sizeof(words[0]))

static uint64_t state;

static uint64_t next(void)
{
	/* splitmix64: every seed gives a different, well mixed sequence. */
	uint64_t z = (state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "session_gen: %s %s: %s\n", what, arg, strerror(errno));
	exit(1);
}

static uint64_t number(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	if (end == s)
		goto bad;
	if (*end == 'K')
		v <<= 10, end++;
	else if (*end == 'M')
		v <<= 20, end++;
	if (!*end)
		return v;
bad:
	fprintf(stderr, "session_gen: not a number: %s\n", s);
	exit(2);
}

static void write_all(int fd, const char *buf, size_t len, const char *name)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("cannot write", name);
		buf += n;
		len -= (size_t)n;
	}
}

/* One line: "word word 123456 key-1f2e\n", under 80 bytes. */
static size_t line(char *out)
{
	uint64_t r = next();

	return (size_t)sprintf(out, "%s %s %llu key-%llx\n", words[r % NWORDS],
			       words[(r >> 8) % NWORDS], (unsigned long long)(r >> 40),
			       (unsigned long long)((r >> 16) & 0xfff));
}

static void text(int fd, uint64_t size, const char *name)
{
	static char buf[CHUNK + 128];
	size_t len = 0;

	while (size) {
		len += line(buf + len);
		if (len >= CHUNK || len >= size) {
			size_t n = len < size ? len : (size_t)size;

			write_all(fd, buf, n, name);
			size -= n;
			len = 0;
		}
	}
}

static void bytes(int fd, uint64_t size, const char *name)
{
	static uint64_t buf[CHUNK / 8];

	while (size) {
		size_t n = size < CHUNK ? (size_t)size : CHUNK, i;

		for (i = 0; i < CHUNK / 8; i++)
			buf[i] = next();
		write_all(fd, (const char *)buf, n, name);
		size -= n;
	}
}

static void lines(uint64_t count)
{
	static char buf[CHUNK + 128];
	size_t len = 0;

	while (count--) {
		len += line(buf + len);
		if (len >= CHUNK) {
			write_all(1, buf, len, "stdout");
			len = 0;
		}
	}
	write_all(1, buf, len, "stdout");
}

static void tree(const char *dir, uint64_t count)
{
	char path[4096];
	uint64_t i;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		die("cannot create", dir);
	for (i = 0; i < count; i++) {
		uint64_t r = next(), size;
		bool binary = r % 10 == 0;
		int fd;

		/* 60% small, 37% in the tree range, 3% a few MiB. */
		if (r % 100 < 60)
			size = 1 + (r >> 8) % 8192;
		else if (r % 100 < 97)
			size = (64 << 10) + (r >> 8) % (192 << 10);
		else
			size = (1 << 20) + (r >> 8) % (3 << 20);
		snprintf(path, sizeof(path), "%s/d%02llu", dir, (unsigned long long)(i % 16));
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			die("cannot create", path);
		snprintf(path, sizeof(path), "%s/d%02llu/f%04llu.%s", dir,
			 (unsigned long long)(i % 16), (unsigned long long)i,
			 binary ? "bin" : "txt");
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("cannot create", path);
		if (binary)
			bytes(fd, size, path);
		else
			text(fd, size, path);
		if (close(fd) != 0)
			die("cannot close", path);
	}
}

int main(int argc, char **argv)
{
	if (argc < 4)
		goto usage;
	state = number(argv[2]);
	if (!strcmp(argv[1], "lines") && argc == 4)
		lines(number(argv[3]));
	else if (!strcmp(argv[1], "bytes") && argc == 4)
		bytes(1, number(argv[3]), "stdout");
	else if (!strcmp(argv[1], "tree") && argc == 5)
		tree(argv[3], number(argv[4]));
	else
		goto usage;
	return 0;
usage:
	fprintf(stderr, "usage: session_gen lines SEED COUNT | bytes SEED SIZE | "
			"tree SEED DIR COUNT\n");
	return 2;
}
