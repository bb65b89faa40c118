# libuseonce: see README.md.  `make`, `make check`, `make demo`, `make bench`, `make install`.

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
MANDIR  ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
# The hooks define read, pread... themselves: no fortify wrappers, no 64-bit renames.
BASE_CFLAGS = -std=gnu11 -D_GNU_SOURCE -U_FORTIFY_SOURCE -Iinclude -Ipreload $(WARN)
LIB_CFLAGS  = $(BASE_CFLAGS) -fPIC -fvisibility=hidden
B       ?= build

ifeq ($(V),1)
Q =
else
Q = @
endif

LIB_SRCS = preload/hooks.c preload/guard.c preload/advise.c preload/fdtab.c \
           preload/policy.c preload/config.c preload/trace.c preload/sys.c \
           preload/record.c preload/conffile.c preload/stats.c
LIB_OBJS = $(LIB_SRCS:preload/%.c=$(B)/obj/%.o)
HDRS     = include/useonce.h preload/uo_internal.h preload/uo_conf.h preload/hooks.def
# Where the system config file is looked for, compiled into the library.
UO_DEFS  = -DUO_SYSCONFDIR='"$(SYSCONFDIR)"'

all: $(B)/libuseonce.so $(B)/useonce $(B)/policy-replay

$(B)/obj/%.o: preload/%.c $(HDRS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(LIB_CFLAGS) $(UO_DEFS) $(CFLAGS) -c -o $@ $<

$(B)/libuseonce.map: preload/libuseonce.map.in preload/hooks.def
	@mkdir -p $(B)
	$(Q)$(CC) -E -P -x c -Ipreload $< | grep -v '^ *$$' > $@

# -nostartfiles: the C runtime's start files only serve C++ destructors and
# transactional memory here, and cost every process a few symbol lookups.
$(B)/libuseonce.so: $(LIB_OBJS) $(B)/libuseonce.map Makefile
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -nostartfiles $(CFLAGS) $(LDFLAGS) -Wl,--version-script=$(B)/libuseonce.map \
		-Wl,-soname,libuseonce.so -o $@ $(LIB_OBJS) -Wl,--as-needed -ldl

$(B)/useonce: preload/useonce.c include/useonce.h
	@mkdir -p $(B)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) $(CFLAGS) -DUO_LIBDIR='"$(LIBDIR)"' $(LDFLAGS) -o $@ $<

$(B)/policy-replay: examples/policy-replay.c preload/policy.c include/useonce.h
	@mkdir -p $(B)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ examples/policy-replay.c preload/policy.c

include tests/tests.mk
-include bench/bench.mk

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 0755 $(B)/useonce $(DESTDIR)$(BINDIR)/useonce
	install -m 0644 $(B)/libuseonce.so $(DESTDIR)$(LIBDIR)/libuseonce.so
	install -m 0644 man/useonce.1 $(DESTDIR)$(MANDIR)/man1/useonce.1

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/useonce $(DESTDIR)$(LIBDIR)/libuseonce.so \
		$(DESTDIR)$(MANDIR)/man1/useonce.1

clean:
	rm -rf $(B)

.PHONY: all install uninstall clean
