# The demo and the benchmarks, included by the top-level Makefile.
#
# `make demo` builds everything, then shows the guard at work on data it
# makes itself (bench/demo.c).  It runs as whoever calls it; as root it can
# show more.
#
# `make bench` runs the benchmarks (bench/run.sh: the use-once test, the
# cached read and write path, fork and exec, uncached I/O, files that come
# back, and programs watched from outside by bench/watch.sh) and writes
# markdown and a plot under bench/results/.  `make bench-smoke` runs them
# at tiny sizes, once each, into bench/results/smoke/: it proves the bench
# works and measures nothing.

DEMO_BIN = $(B)/bench/demo
BENCH_COMMON = bench/benchlib.c tests/testlib.c
BENCH_HDRS = bench/bench.h tests/testlib.h
BENCH_BINS = $(B)/bench/use_once $(B)/bench/read_path $(B)/bench/fork_exec \
             $(B)/bench/uncached $(B)/bench/comeback $(B)/bench/trees
# The streamers and the comparison library the benchmarks run.
BENCH_AUX = $(B)/tests/splice_copy $(B)/tests/static_io $(B)/bench/empty.so \
            $(B)/bench/empty-nostart.so

$(DEMO_BIN): bench/demo.c tests/testlib.c tests/testlib.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ \
		bench/demo.c tests/testlib.c $(LDFLAGS)

$(B)/bench/%: bench/%.c $(BENCH_COMMON) $(BENCH_HDRS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) -Itests -Ibench $(CFLAGS) -o $@ \
		$< $(BENCH_COMMON) $(LDFLAGS)

# The baselines for what any preload costs: a library with nothing in it,
# linked against libc.  empty.so is built the plain way (gcc -shared -fPIC),
# empty-nostart.so with the flags libuseonce.so itself is linked with
# (-nostartfiles: no C runtime start files), so libuseonce's own cost can
# be told from what those files cost.
$(B)/bench/empty.so: bench/empty.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(LIB_CFLAGS) $(CFLAGS) -shared $(LDFLAGS) \
		-Wl,-soname,empty.so -o $@ $< -Wl,--no-as-needed -lc

$(B)/bench/empty-nostart.so: bench/empty.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(LIB_CFLAGS) $(CFLAGS) -shared -nostartfiles $(LDFLAGS) \
		-Wl,-soname,empty-nostart.so -o $@ $< -Wl,--no-as-needed -lc

demo: all $(DEMO_BIN)
	$(Q)UO_BUILD=$(B) $(DEMO_BIN)

bench-deps:
	$(Q)bench/install-deps.sh

bench-bins: all $(BENCH_BINS) $(BENCH_AUX)

bench: bench-deps
	$(Q)$(MAKE) --no-print-directory bench-bins
	$(Q)UO_BUILD=$(B) bench/run.sh

bench-smoke: bench-deps
	$(Q)$(MAKE) --no-print-directory bench-bins
	$(Q)UO_BUILD=$(B) UO_BENCH_SMOKE=1 bench/run.sh

.PHONY: demo bench bench-deps bench-bins bench-smoke
