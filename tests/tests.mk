# Tests: included by the top-level Makefile.  Every tests/check_*.c is one
# Check program; tests/testlib.c holds what the end-to-end ones share.

CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   = $(shell pkg-config --libs check 2>/dev/null)
TEST_SRCS    = $(wildcard tests/check_*.c)
TEST_BINS    = $(TEST_SRCS:tests/%.c=$(B)/tests/%)
TEST_HELPERS = $(patsubst tests/helpers/%.c,$(B)/tests/%,$(wildcard tests/helpers/*.c)) \
	       $(B)/tests/write_fsync_static
TESTLIB      = $(wildcard tests/testlib.c)

$(B)/tests/check_%: tests/check_%.c $(TESTLIB) $(wildcard tests/*.h) $(HDRS) preload/policy.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) -Itests $(CHECK_CFLAGS) $(CFLAGS) -o $@ \
		$< $(TESTLIB) preload/policy.c $(TEST_EXTRA) $(LDFLAGS) $(CHECK_LIBS)

# check_conffile unit-tests the config parser itself.
$(B)/tests/check_conffile: preload/conffile.c
$(B)/tests/check_conffile: TEST_EXTRA = preload/conffile.c

# check_watch drives the watcher's own functions too.
$(B)/tests/check_watch: cmd/watch.c cmd/watch.h cmd/wfile.c cmd/wfile.h preload/conffile.c
$(B)/tests/check_watch: TEST_EXTRA = -Icmd cmd/watch.c cmd/wfile.c preload/conffile.c

# check_wfile drives the watcher's files directly.
$(B)/tests/check_wfile: cmd/wfile.c cmd/wfile.h
$(B)/tests/check_wfile: TEST_EXTRA = -Icmd cmd/wfile.c

# The system config file is tested with a library that looks for it in the
# build directory: tests never write /etc.
TEST_SYSCONFDIR = $(abspath $(B))/test-etc
TEST_SYSCONF_OBJS = $(LIB_SRCS:preload/%.c=$(B)/test-sysconf/obj/%.o)

$(B)/test-sysconf/obj/%.o: preload/%.c $(HDRS) tests/tests.mk
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(call lib_cflags,$<) -DUO_SYSCONFDIR='"$(TEST_SYSCONFDIR)"' $(CFLAGS) -c -o $@ $<

$(B)/test-sysconf/libuseonce.so: $(TEST_SYSCONF_OBJS) $(B)/libuseonce.map
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -nostartfiles $(CFLAGS) $(LDFLAGS) -Wl,--version-script=$(B)/libuseonce.map \
		-Wl,-soname,libuseonce.so -o $@ $(TEST_SYSCONF_OBJS) -Wl,--as-needed -ldl
	@mkdir -p $(TEST_SYSCONFDIR)

# libFuzzer over the config and environment parsers (clang).  `make fuzz`
# runs it for FUZZ_SECONDS; `make check` replays the kept corpus.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 600
FUZZ_FLAGS    = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

$(B)/fuzz/fuzz_config: tests/fuzz/fuzz_config.c preload/conffile.c preload/conf.h include/useonce.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -Iinclude -Ipreload $(FUZZ_FLAGS) -o $@ \
		tests/fuzz/fuzz_config.c preload/conffile.c

fuzz: $(B)/fuzz/fuzz_config
	@mkdir -p $(B)/fuzz/corpus
	$(Q)$(B)/fuzz/fuzz_config -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
		-dict=tests/fuzz/config.dict $(B)/fuzz/corpus tests/fuzz/corpus

fuzz-replay:
	$(Q)tests/fuzz/replay.sh $(B) "$(FUZZ_CC)"

$(B)/tests/%: tests/helpers/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS)

# early_reader is a library preloaded by check_e2e: a shared object, not a program.
TEST_HELPERS := $(filter-out $(B)/tests/early_reader,$(TEST_HELPERS)) $(B)/tests/early_reader.so

$(B)/tests/early_reader.so: tests/helpers/early_reader.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) $(CFLAGS) -shared -fPIC -DUOT_EARLY_READER_LIB -o $@ $< $(LDFLAGS)

include tests/sanitize.mk

test-deps:
	$(Q)tests/install-deps.sh

tests: all $(TEST_BINS) $(TEST_HELPERS) $(B)/test-sysconf/libuseonce.so

# The builds of `make check` use every core (serial, they were 156 s of a
# 14-minute run on 2 cores; 77 s in parallel); `make -jN check` says otherwise.
CHECK_JOBS ?= $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1))

check: test-deps
	$(Q)$(MAKE) --no-print-directory $(CHECK_JOBS) tests san-tests
	$(Q)$(MAKE) --no-print-directory fuzz-replay
	$(Q)tests/run-tests.sh $(B) $(TEST_BINS) $(SAN_RUN_ARGS)

# One suite alone, in the environment `make check` gives it (tests/README.md):
#   make check-one T=check_policy     (or T=policy)
# Builds what every suite may need (the library, the command, the helpers),
# then runs that one program through run-tests.sh; no sanitizer pass.
CHECK_ONE = $(B)/tests/check_$(patsubst check_%,%,$(T))
check-one:
	$(if $(T),,$(error check-one: say which suite, e.g. make check-one T=check_policy))
	$(if $(wildcard tests/$(notdir $(CHECK_ONE)).c),,$(error check-one: no tests/$(notdir $(CHECK_ONE)).c))
	$(Q)$(MAKE) --no-print-directory all $(CHECK_ONE) $(TEST_HELPERS) $(B)/test-sysconf/libuseonce.so
	$(Q)tests/run-tests.sh $(B) $(CHECK_ONE)


.PHONY: test-deps tests check check-one fuzz fuzz-replay

# check_watch: a program no preload reaches, because it is static.
$(B)/tests/static_io: tests/helpers/static_io.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) $(CFLAGS) -static -pthread -o $@ $< $(LDFLAGS)

# check_faildisk: the same writer, static, so only the watcher can guard it.
$(B)/tests/write_fsync_static: tests/helpers/write_fsync.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) $(CFLAGS) -static -o $@ $< $(LDFLAGS)
