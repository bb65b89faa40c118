# The sanitizer pass of `make check`, included by tests/tests.mk.
#
# $(B)/asan: the library, every test and helper built again with
# AddressSanitizer + UndefinedBehaviorSanitizer; a UB report aborts
# (-fno-sanitize-recover), an ASan report always does.
# $(B)/tsan: the library and check_threads built with ThreadSanitizer.
#
# A program that is not built with a sanitizer (cp, cat, python3) can load
# the sanitized library only if the sanitizer's runtime is loaded first,
# before libc: the tests put the runtime named by UO_PRELOAD_FIRST in front
# of the library in LD_PRELOAD (uot_preload(), testlib.h).  -nostartfiles
# does not matter: the sanitizers' module constructors live in .init_array
# like ours, and a library mutant reading past a global was reported.

SAN_CC       ?= gcc
ASAN_B        = $(B)/asan
TSAN_B        = $(B)/tsan
ASAN_FLAGS    = -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-fno-omit-frame-pointer
TSAN_FLAGS    = -fsanitize=thread -fno-omit-frame-pointer
ASAN_RUNTIME  = $(shell $(SAN_CC) -print-file-name=libasan.so 2>/dev/null)
TSAN_RUNTIME  = $(shell $(SAN_CC) -print-file-name=libtsan.so 2>/dev/null)

# Which programs run under each sanitizer, and their environment.  Of
# check_e2e the library suite runs (hooks called before our constructor)
# and the footprint suite, on a smaller stream: every program
# (cp, cat, dd, tar, python3, splice, sha256sum) with the sanitized library
# preloaded, each hook kind on a real stream.  The hot-set suite adds
# minutes of streaming in a cgroup, which tests the kernel's side.
# check_conffile runs the config and value parsers on every malformed input
# it has, check_config every bad variable and key through the library, and
# check_results every hook on every error, behind the interceptors.
ASAN_E2E_MIB ?= 128
ASAN_TESTS    = check_policy check_hooks check_e2e check_exports check_threads check_life \
		check_conffile check_config check_results
TSAN_TESTS    = check_threads
# detect_leaks=0: the library never allocates, so LeakSanitizer could only
# speak of the programs it is preloaded into (cp, python3), whose leaks at
# exit are theirs.  A report of either sanitizer ends the program with a
# failure status; run-tests.sh also fails a program whose output holds one.
ASAN_ENV      = UO_BUILD=$(ASAN_B) UO_PRELOAD_FIRST=$(ASAN_RUNTIME) \
		ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:halt_on_error=1:exitcode=86 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87 \
		UO_SAN_RUN=asan
# symbolize=0: TSan's symbolizer (libbacktrace) calls close(), which is our
# hook, instrumented: a race report then reported a race inside itself and
# deadlocked.  Reports name module+offset; addr2line -f -e the module reads them.
# No suppressions: the slots' try-lock and counters are C11 atomics, which
# TSan sees (proved by a mutant that made the lock relaxed: reported at once).
TSAN_ENV      = UO_BUILD=$(TSAN_B) UO_PRELOAD_FIRST=$(TSAN_RUNTIME) \
		TSAN_OPTIONS=halt_on_error=1:exitcode=88:symbolize=0 \
		UO_SAN_RUN=tsan

# Empty when gcc has no sanitizer runtime here: the pass says so and is skipped.
SAN_OK = $(and $(filter /%,$(ASAN_RUNTIME)),$(wildcard $(ASAN_RUNTIME)),\
	       $(filter /%,$(TSAN_RUNTIME)),$(wildcard $(TSAN_RUNTIME)))

san-tests:
ifneq ($(SAN_OK),)
	$(Q)$(MAKE) --no-print-directory B=$(ASAN_B) CC=$(SAN_CC) \
		CFLAGS="-O1 -g $(ASAN_FLAGS)" LDFLAGS="$(ASAN_FLAGS)" \
		$(ASAN_B)/libuseonce.so $(ASAN_TESTS:%=$(ASAN_B)/tests/%) \
		$(ASAN_B)/tests/splice_copy $(ASAN_B)/tests/early_reader.so \
		$(ASAN_B)/test-sysconf/libuseonce.so
	$(Q)$(MAKE) --no-print-directory B=$(TSAN_B) CC=$(SAN_CC) \
		CFLAGS="-O1 -g $(TSAN_FLAGS)" LDFLAGS="$(TSAN_FLAGS)" \
		$(TSAN_B)/libuseonce.so $(TSAN_TESTS:%=$(TSAN_B)/tests/%)
else
	@echo "check: sanitizer pass skipped: $(SAN_CC) has no libasan/libtsan here"
endif

# Arguments for run-tests.sh: NAME=VALUE sets the environment of the programs after it.
ifneq ($(SAN_OK),)
SAN_RUN_ARGS = $(ASAN_ENV) $(ASAN_B)/tests/check_policy $(ASAN_B)/tests/check_hooks \
	       $(ASAN_B)/tests/check_threads $(ASAN_B)/tests/check_life \
	       $(ASAN_B)/tests/check_config $(ASAN_B)/tests/check_results \
	       $(ASAN_B)/tests/check_exports $(ASAN_B)/tests/check_conffile \
	       CK_RUN_SUITE=library $(ASAN_B)/tests/check_e2e \
	       CK_RUN_SUITE=footprint UO_E2E_STREAM_MIB=$(ASAN_E2E_MIB) $(ASAN_B)/tests/check_e2e \
	       CK_RUN_SUITE= UO_E2E_STREAM_MIB= ASAN_OPTIONS= UBSAN_OPTIONS= \
	       $(TSAN_ENV) $(TSAN_TESTS:%=$(TSAN_B)/tests/%)
endif

.PHONY: san-tests
