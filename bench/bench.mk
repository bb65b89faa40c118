# The demo, included by the top-level Makefile: `make demo` builds
# everything, then shows the guard at work on data it makes itself
# (bench/demo.c).  It runs as whoever calls it; as root it can show more.

DEMO_BIN = $(B)/bench/demo

$(DEMO_BIN): bench/demo.c tests/testlib.c tests/testlib.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ \
		bench/demo.c tests/testlib.c $(LDFLAGS)

demo: all $(DEMO_BIN)
	$(Q)UO_BUILD=$(B) $(DEMO_BIN)

.PHONY: demo
