/*
 * empty.so and empty-nostart.so: a preloaded library that does nothing,
 * built the plain way and the way libuseonce.so is (see bench/bench.mk).
 * What the dynamic loader charges every process for loading any preload
 * is measured with them, so the fork/exec benchmark can tell that cost
 * from libuseonce's own.
 *
 * SPDX-License-Identifier: MIT
 */

/* ISO C wants one declaration in a translation unit; this one exports nothing. */
static const char uob_empty[] __attribute__((used)) = "empty preload";
