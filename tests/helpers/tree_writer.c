/*
 * check_trees' writer of a tree that reads one of its files back: writes
 * N files of KIB KiB into DIR (f000, f001... made anew, 64 KiB a write),
 * as tar x does; just after closing file K it runs "cat DIR/fK" (another
 * process, as a build or a checksum would) and goes on.  Exits 0 if all
 * was written.  With a fifth argument "lock", file K is not read back but
 * opened again and write-locked (fcntl), kept open, and made clean
 * (syncfs) while the rest is written; exits 3 if another process no longer
 * sees the lock at the end (a descriptor of the library's closed on it
 * would have released it).
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

/* Does another process see a write lock on the file? */
static int locked_for_another(const char *path)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		_exit(fd >= 0 && fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	static char buf[64 * 1024];
	char path[4096], cmd[4200];
	unsigned n, kib, k, i, j;
	int fd, lk = -1;
	int lock = argc == 6 && !strcmp(argv[5], "lock");

	if (argc != 5 && !lock)
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
		if (i == k && lock) {
			struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

			lk = open(path, O_RDWR | O_CLOEXEC);
			if (lk < 0 || fcntl(lk, F_SETLK, &fl) != 0 || syncfs(lk) != 0 ||
			    !locked_for_another(path))
				return 1;
			snprintf(cmd, sizeof(cmd), "%s", path);
		} else if (i == k) {
			/* A clock tick later: the read must be seen as after the write. */
			struct timespec ts = { 0, 20 * 1000 * 1000 };

			nanosleep(&ts, NULL);
			snprintf(cmd, sizeof(cmd), "cat '%s' >/dev/null", path);
			if (system(cmd) != 0)
				return 1;
		}
	}
	if (lk >= 0 && !locked_for_another(cmd))
		return 3;
	return 0;
}
