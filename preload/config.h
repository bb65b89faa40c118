/*
 * The library's settings: filled in once, by the constructor, before
 * threads exist, from the config files and the environment (config.c), and
 * only read after that.  Hooks that run before the constructor (other
 * libraries' constructors read files) see the built-in defaults.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_CONFIG_H
#define UO_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "policy.h"

struct uo_config {
	struct uo_tuning tuning;
	bool disabled;
	bool only_always;	/* enable = no: only files under an always rule are guarded */
	bool dryrun;		/* decide as usual, give no advice */
	struct uo_dest trace;	/* USEONCE_TRACE; its descriptor is our own (uo_dest_keep) */
	uint32_t reuse_s;	/* a file streamed again within this is left cached; 0: never */
	char runtime_dir[256];	/* $XDG_RUNTIME_DIR, absolute; "": none (userdir.c) */
	char tmp_dir[230];	/* $TMPDIR, absolute; "": /tmp */
	struct uo_dest stats;	/* USEONCE_STATS, the same way */
};

extern struct uo_config uo_config;
extern struct uo_rules uo_rules;	/* never/always rules of the config files */

void uo_config_load(char *const *argv);
const char *uo_program_name(void);	/* argv[0]'s basename, for the statistics */

static inline bool uo_stats_wanted(void)
{
	return !uo_config.disabled && (uo_config.stats.fd >= 0 || uo_config.stats.path[0]);
}

#endif /* UO_CONFIG_H */
