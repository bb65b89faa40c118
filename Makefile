# libuseonce: see README.md.  `make`, `make check`, `make demo`, `make bench`, `make install`.

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
MANDIR  ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
# 64-bit file offsets everywhere (a 32-bit build must not cut offsets at
# 2 or 4 GiB), except in hooks.c: the hooks define read, pread... themselves,
# so there no fortify wrappers and no 64-bit renames.
BASE_CFLAGS = -std=gnu11 -D_GNU_SOURCE -U_FORTIFY_SOURCE -Iinclude -Ipreload $(WARN)
LFS_CFLAGS  = -D_FILE_OFFSET_BITS=64
LIB_CFLAGS  = $(BASE_CFLAGS) -fPIC -fvisibility=hidden
# The flags of one library source.
lib_cflags  = $(LIB_CFLAGS) $(if $(filter hooks.c,$(notdir $(1))),,$(LFS_CFLAGS))
B       ?= build

ifeq ($(V),1)
Q =
else
Q = @
endif

# The library's layers, top down: hooks (and copy) -> guard -> tree (and behind),
# classify, record, advise, fdtab, policy -> sys, and vfork -> fdtab; config
# fills one struct that the others read; stats and trace are leaves.
LIB_SRCS = preload/hooks.c preload/copy.c preload/guard.c preload/tree.c preload/behind.c \
           preload/classify.c preload/record.c preload/advise.c preload/fdtab.c \
           preload/policy.c preload/config.c preload/conffile.c preload/stats.c \
           preload/trace.c preload/userdir.c preload/vfork.c preload/sys.c
LIB_OBJS = $(LIB_SRCS:preload/%.c=$(B)/obj/%.o)
HDRS     = include/useonce.h $(wildcard preload/*.h) preload/hooks.def
# Where the system config file is looked for, compiled into the library.
UO_DEFS  = -DUO_SYSCONFDIR='"$(SYSCONFDIR)"'

all: $(B)/libuseonce.so $(B)/useonce $(B)/policy-replay

$(B)/obj/%.o: preload/%.c $(HDRS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(call lib_cflags,$<) $(UO_DEFS) $(CFLAGS) -c -o $@ $<

# SYSCONFDIR is compiled into config.o: rebuilt when it changes.
$(B)/obj/config.o: $(B)/dirs

$(B)/libuseonce.map: preload/libuseonce.map.in preload/hooks.def
	@mkdir -p $(B)
	$(Q)$(CC) -E -P -x c -Ipreload $< | grep -v '^ *$$' > $@

# -nostartfiles: the C runtime's start files only serve C++ destructors and
# transactional memory here, and cost every process a few symbol lookups.
$(B)/libuseonce.so: $(LIB_OBJS) $(B)/libuseonce.map Makefile
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -nostartfiles $(CFLAGS) $(LDFLAGS) -Wl,--version-script=$(B)/libuseonce.map \
		-Wl,-soname,libuseonce.so -o $@ $(LIB_OBJS) -Wl,--as-needed -ldl

# The command has BINDIR, LIBDIR and SYSCONFDIR compiled in: it is rebuilt when they change.
# It shares the library's pure parts: the settings parsers and, for its watcher, the policy.
CMD_SRCS = cmd/useonce.c cmd/watch.c cmd/wfile.c preload/conffile.c preload/policy.c
$(B)/useonce: $(CMD_SRCS) cmd/watch.h cmd/wfile.h include/useonce.h preload/conf.h preload/policy.h $(B)/dirs
	@mkdir -p $(B)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) $(LFS_CFLAGS) -Icmd $(CFLAGS) -DUO_LIBDIR='"$(LIBDIR)"' \
		-DUO_BINDIR='"$(BINDIR)"' $(UO_DEFS) $(LDFLAGS) -o $@ $(CMD_SRCS)

# Rewritten only when the directories differ from the last build's.
UO_DIRS = BINDIR=$(BINDIR) LIBDIR=$(LIBDIR) SYSCONFDIR=$(SYSCONFDIR)
$(B)/dirs: FORCE
	@mkdir -p $(B)
	@[ "$$(cat $@ 2>/dev/null)" = '$(UO_DIRS)' ] || echo '$(UO_DIRS)' > $@

$(B)/policy-replay: examples/policy-replay.c preload/policy.c preload/policy.h include/useonce.h
	@mkdir -p $(B)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(BASE_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ examples/policy-replay.c preload/policy.c

include tests/tests.mk
-include bench/bench.mk

# ---- install ----
# DESTDIR stages a tree (a package build); the other directories are where
# the files end up, and the command looks for the library there.
# The sample config: installed if there is one, and never over an admin's changes.
CONF_SRC   ?= examples/useonce.conf
CONF_DST    = $(DESTDIR)$(SYSCONFDIR)/useonce.conf

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man7
	install -m 0755 $(B)/useonce $(DESTDIR)$(BINDIR)/useonce
	install -m 0644 $(B)/libuseonce.so $(DESTDIR)$(LIBDIR)/libuseonce.so
	install -m 0644 cmd/useonce.1 $(DESTDIR)$(MANDIR)/man1/useonce.1
	install -m 0644 preload/libuseonce.7 $(DESTDIR)$(MANDIR)/man7/libuseonce.7
	@if [ ! -f '$(CONF_SRC)' ]; then :; \
	elif [ -e '$(CONF_DST)' ] && ! cmp -s '$(CONF_SRC)' '$(CONF_DST)'; then \
		echo "useonce: $(CONF_DST) was changed: kept as it is"; \
	else \
		echo "install -D -m 0644 $(CONF_SRC) $(CONF_DST)"; \
		install -D -m 0644 '$(CONF_SRC)' '$(CONF_DST)'; \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/useonce $(DESTDIR)$(LIBDIR)/libuseonce.so \
		$(DESTDIR)$(MANDIR)/man1/useonce.1 $(DESTDIR)$(MANDIR)/man7/libuseonce.7
	@if [ ! -e '$(CONF_DST)' ]; then :; \
	elif [ -f '$(CONF_SRC)' ] && cmp -s '$(CONF_SRC)' '$(CONF_DST)'; then \
		echo "rm -f $(CONF_DST)"; rm -f '$(CONF_DST)'; \
	else \
		echo "useonce: $(CONF_DST) was changed: kept"; \
	fi
	$(if $(filter libuseonce,$(notdir $(LIBDIR))),-rmdir $(DESTDIR)$(LIBDIR))

# The Debian package, built from a copy of the tree (dpkg-buildpackage writes
# into the parent directory); the .deb files end in $(B)/deb.
UO_VERSION = $(shell sed -n 's/^\#define USEONCE_VERSION "\(.*\)"/\1/p' include/useonce.h)
deb:
	rm -rf $(B)/deb && mkdir -p $(B)/deb/libuseonce-$(UO_VERSION)
	tar --exclude=./.git --exclude='./build*' --exclude='./$(B)' --exclude=./bench/results \
		-cf - . | tar -C $(B)/deb/libuseonce-$(UO_VERSION) -xf -
	cd $(B)/deb/libuseonce-$(UO_VERSION) && DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -us -uc -b
	rm -rf $(B)/deb/libuseonce-$(UO_VERSION)
	@ls $(B)/deb/*.deb

clean:
	rm -rf $(B)

.PHONY: all install uninstall deb clean FORCE
