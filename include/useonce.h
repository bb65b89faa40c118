/*
 * libuseonce: keep one big sequential stream from flushing everyone else's
 * page cache.
 *
 * The names the library and the command share with their users: the
 * version, the environment variables the library reads, and the defaults the
 * documentation gives.  Constants only: the library exports nothing but its
 * hooks, so there is no API to declare, and the header is not installed.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef USEONCE_H
#define USEONCE_H

#define USEONCE_VERSION "0.1.0"

/*
 * Environment variables read once, when the library is loaded.  They
 * override the config files: SYSCONFDIR/useonce.conf (system), then
 * $XDG_CONFIG_HOME/useonce/config or ~/.config/useonce/config (user; see
 * examples/useonce.conf for the format).  In secure mode (setuid) neither
 * the environment nor the user's file is read.  A bad value gets one
 * "useonce: NAME=VALUE: why; ignored" line on stderr, an empty one too.
 * Booleans take 1/0, yes/no, true/false, on/off; sizes K, M, G, T.
 */
#define USEONCE_ENV_DISABLE	"USEONCE_DISABLE"	/* 1: pass everything through; 0: on, whatever the files say */
#define USEONCE_ENV_THRESHOLD	"USEONCE_THRESHOLD"	/* size: sequential bytes before a stream */
#define USEONCE_ENV_WINDOW	"USEONCE_WINDOW"	/* size: bytes between two advice calls */
#define USEONCE_ENV_GUARD	"USEONCE_GUARD"		/* read, write or both */
#define USEONCE_ENV_TRACE	"USEONCE_TRACE"		/* "stderr", a descriptor number or an absolute path */
#define USEONCE_ENV_REUSE	"USEONCE_REUSE"		/* seconds (90s, 10m, 2h, 1d): a file streamed again within is kept */
/* One line at exit, if a stream was seen: "stderr" or 1, a descriptor number, or an absolute path (appended); 0: off. */
#define USEONCE_ENV_STATS	"USEONCE_STATS"
#define USEONCE_ENV_DRYRUN	"USEONCE_DRYRUN"	/* 1: decide as usual, advise nothing */
#define USEONCE_ENV_CONFIG	"USEONCE_CONFIG"	/* a config file read instead of the user's */

/* Defaults, chosen from measurements on ext4 with 2 MiB folios. */
#define USEONCE_DEFAULT_THRESHOLD	(32ULL << 20)
#define USEONCE_DEFAULT_WINDOW		(8ULL << 20)
#define USEONCE_DEFAULT_REUSE		600
#endif /* USEONCE_H */
