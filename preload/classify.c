/*
 * Is a descriptor worth guarding?  Asked once per stream (or file of a
 * tree), never per call.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>

#include "classify.h"
#include "config.h"
#include "sys.h"

_Static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64");

/* Filesystems whose pages are the only copy, or that have no page cache to speak of. */
static bool uo_memory_fs(unsigned long type)
{
	switch (type) {
	case TMPFS_MAGIC:
	case RAMFS_MAGIC:
	case HUGETLBFS_MAGIC:
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case SECURITYFS_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
	case BPF_FS_MAGIC:
	case DEVPTS_SUPER_MAGIC:
		return true;
	default:
		return false;
	}
}

/*
 * Filesystems on a local disk, where a clean page is a copy of what is on
 * the disk and POSIX_FADV_DONTNEED drops it.  A list of those known, not
 * of those to avoid: overlay, FUSE, NFS, CIFS and the like (the watcher's
 * uo_wfs_remote) answer an open with work of their own (a daemon, a
 * server, a copy up), and anything unknown is left alone.
 */
static bool uo_disk_fs(unsigned long type)
{
	switch (type) {
	case 0xEF53:		/* ext2, ext3, ext4 */
	case 0x58465342:	/* xfs */
	case 0x9123683E:	/* btrfs */
	case 0xF2F52010:	/* f2fs */
	case 0xCA451A4E:	/* bcachefs */
	case 0x3153464A:	/* jfs */
	case 0x3434:		/* nilfs2 */
	case 0x2011BAB0:	/* exfat */
	case 0x4D44:		/* vfat, msdos */
	case 0x7366746E:	/* ntfs3 */
		return true;
	default:
		return false;
	}
}

const char *uo_not_for_later(int fd)
{
	struct statfs sfs;

	if (uo_sys(SYS_fstatfs, fd, &sfs) != 0 || !uo_disk_fs((unsigned long)sfs.f_type))
		return "not a local disk filesystem";
	/*
	 * Whether a written file was read since is told by its access time
	 * alone: on a noatime mount a file read back (a build of what tar x
	 * unpacked, a test's fixtures) looks unread and would be dropped.
	 */
	if (sfs.f_flags & ST_NOATIME)
		return "mounted noatime: a read since it was written cannot be told";
	return NULL;
}

const char *uo_classify(int fd, struct uo_file *f)
{
	struct uo_file st;
	struct statfs sfs;
	long fl;

	if (uo_fstat(fd, &st) != 0)
		return "statx failed";
	if (!S_ISREG(st.mode))
		return "not a regular file";
	if (uo_sys(SYS_fstatfs, fd, &sfs) == 0 && uo_memory_fs((unsigned long)sfs.f_type))
		return "memory filesystem: its pages are the only copy";
	fl = uo_sys(SYS_fcntl, fd, F_GETFL);
	if (fl >= 0 && (fl & O_DIRECT))
		return "O_DIRECT bypasses the page cache";
	*f = st;
	return NULL;
}

bool uo_same_file(int fd, const struct uo_file *was, uint64_t *size)
{
	struct uo_file st;

	if (uo_fstat(fd, &st) != 0 || st.dev != was->dev || st.ino != was->ino)
		return false;
	*size = st.size;
	return true;
}

const char *uo_path_rule(int fd)
{
	char link[UO_PROC_FD_PATH], path[1024];
	enum uo_rule_kind kind;
	long len;

	if (!uo_rules.n)
		return NULL;
	uo_proc_fd_path(link, fd);
	/* A path longer than the buffer is cut, but rules are shorter than it. */
	len = uo_sys(SYS_readlinkat, AT_FDCWD, link, path, sizeof(path) - 1);
	path[len > 0 ? len : 0] = '\0';
	kind = uo_rules_match(&uo_rules, path);
	if (kind == UO_RULE_NEVER)
		return "under a never rule of the config";
	if (kind == UO_RULE_NONE && uo_config.only_always)
		return "not under an always rule, and the config says enable = no";
	return NULL;
}
