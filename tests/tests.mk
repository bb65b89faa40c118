# Tests: included by the top-level Makefile.  Every tests/check_*.c is one
# Check program; tests/testlib.c holds what the end-to-end ones share.

CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   = $(shell pkg-config --libs check 2>/dev/null)
TEST_SRCS    = $(wildcard tests/check_*.c)
TEST_BINS    = $(TEST_SRCS:tests/%.c=$(B)/tests/%)
TEST_HELPERS = $(patsubst tests/helpers/%.c,$(B)/tests/%,$(wildcard tests/helpers/*.c))
TESTLIB      = $(wildcard tests/testlib.c)

$(B)/tests/check_%: tests/check_%.c $(TESTLIB) $(wildcard tests/*.h) $(HDRS) preload/policy.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) -Itests $(CHECK_CFLAGS) $(CFLAGS) -o $@ \
		$< $(TESTLIB) preload/policy.c $(LDFLAGS) $(CHECK_LIBS)

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

tests: all $(TEST_BINS) $(TEST_HELPERS)

check: test-deps
	$(Q)$(MAKE) --no-print-directory tests san-tests
	$(Q)tests/run-tests.sh $(B) $(TEST_BINS) $(SAN_RUN_ARGS)

.PHONY: test-deps tests check
