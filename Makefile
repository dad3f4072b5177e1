# ufault - see README.md.  `make`, `make test`, `make run`,
# `make install PREFIX=DIR`, `make uninstall PREFIX=DIR`; `make SAN=address|undefined|thread test`
# builds into build-$(SAN)/ with that sanitizer; `make LOCKDEP=1 test` checks
# the lock order as it runs (src/lib/lockdep.c).
#
# The core (libufault, ufault-info, ufault-tour, ufault-stress,
# ufault-bench) needs only the C library.  The Redis store (libufault-redis,
# ufault-cp, the --store option of ufault-stress and ufault-bench) is built
# when hiredis is found; `make HIREDIS=no` leaves it out on purpose.  The
# HTTP store (libufault-http, http(s):// SOURCEs of ufault-serve and
# ufault-cp) is built when libcurl is found; `make HTTP=no` leaves it out.
# Nothing here installs packages except `make test` run as root (it calls
# redis/deps.sh for the Redis tests' servers and hiredis).
#
# The build runs in parallel (-j as many CPUs as there are, unless make was
# given a -j) and prints one line a step, "  CC      src/fault/fault.c"; `make V=1`
# prints the commands in full, `make -s` nothing.

# Parallel by default; a sub-make shares its parent's jobs, so only the
# top-level make asks for them, and a -j on the command line wins over this.
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

# Quiet by default, as Linux and liburing are: $(Q) hides a command,
# $(quiet) NAME WHAT says what it does instead
ifeq ($(V),1)
Q     :=
quiet := @:
else
Q     := @
ifneq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
quiet := @:
else
quiet := @printf '  %-7s %s\n'
endif
endif

# the one version: man pages, ufault.pc and every tool's --version say it
# (tests/version.sh checks)
VERSION   := $(shell cat VERSION)
SOVERSION := 0
PREFIX    ?= /usr/local
CC        ?= cc
SAN       ?=
STRESS_SECONDS ?= 30

# LOCKDEP=1: check the lock order (src/lib/lockdep.c) as the library runs,
# into build-lockdep/; on in the UndefinedBehaviorSanitizer build
ifeq ($(SAN),undefined)
LOCKDEP ?= 1
endif
ifeq ($(LOCKDEP),1)
LOCKDEP_FLAGS := -DUF_LOCKDEP
LOCKDEP_MAP   := -Wl,--version-script=src/lockdep.map
endif

ifeq ($(SAN)$(LOCKDEP),1)
B ?= build-lockdep
else ifeq ($(SAN),)
B ?= build
else
B ?= build-$(SAN)
SANFLAGS := -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

WARN    := -Wall -Wextra -Werror
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 $(WARN) -pthread $(SANFLAGS)
LDFLAGS += -pthread $(SANFLAGS)
LIBCFLAGS := $(CFLAGS) $(LOCKDEP_FLAGS) -fPIC -fvisibility=hidden -Iinclude -Isrc -Isrc/lib

# one set of objects, position-independent, for both the shared and the
# static library
LIB_SRC := $(wildcard src/*/*.c)
LIB_PIC := $(LIB_SRC:src/%.c=$(B)/pic/%.o)
SONAME  := libufault.so.$(SOVERSION)

ifeq ($(origin HIREDIS),undefined)
HIREDIS := $(shell pkg-config --exists hiredis 2>/dev/null && echo yes || \
	{ test -f /usr/include/hiredis/hiredis.h && echo yes || echo no; })
endif
# the user's HIREDIS=no (command line or environment), not a failed search:
# then neither `make` nor `make test` says hiredis is missing or installs it
HIREDIS_OFF := $(and $(filter-out file,$(origin HIREDIS)),$(filter no,$(HIREDIS)))

# packed snapshots (libufault-pack, ufault-pack, a packed SOURCE of
# ufault-serve) need libzstd: `make PACK=no` (or ZSTD=no) leaves them out
ifeq ($(ZSTD),no)
PACK := no
endif
ifeq ($(origin PACK),undefined)
PACK := $(shell pkg-config --exists libzstd 2>/dev/null && echo yes || \
	{ test -f /usr/include/zstd.h && echo yes || echo no; })
PACK_SEARCHED := yes
endif
ZSTD_LIBS = $(shell pkg-config --libs libzstd 2>/dev/null || echo -lzstd)
# what ufault-serve, ufault-bench and the pack tests link for packed
# snapshots: the library, or tools/pack/no-pack.c, which refuses them
ifeq ($(PACK),yes)
PACK_DEPS := $(B)/libufault-pack.a include/ufault-pack.h
PACK_LINK = $(B)/libufault-pack.a $(ZSTD_LIBS)
else
PACK_DEPS := tools/pack/no-pack.c include/ufault-pack.h
PACK_LINK := tools/pack/no-pack.c
endif

ifeq ($(origin HTTP),undefined)
HTTP := $(shell echo '\#include <curl/curl.h>' | $(CC) $$(pkg-config --cflags libcurl 2>/dev/null) \
	-E - >/dev/null 2>&1 && echo yes || echo no)
endif

# ufault-cp exists only to reach a Redis Cluster or an HTTP server: without
# hiredis and libcurl it is not built
TOOLS   := $(patsubst tools/%.c,$(B)/%,$(wildcard tools/*.c))
ifeq ($(HIREDIS)$(HTTP),nono)
TOOLS   := $(filter-out $(B)/ufault-cp,$(TOOLS))
endif
ifneq ($(PACK),yes)
TOOLS   := $(filter-out $(B)/ufault-pack,$(TOOLS))
endif
TESTS   := $(patsubst tests/%.c,$(B)/tests/%,$(filter-out tests/helpers.c tests/redis-%.c tests/http-%.c,$(wildcard tests/*.c)))
EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
SCRIPTS := $(wildcard tests/*.sh)

# the tests and tools link the static library, so they run from the tree
APP_CFLAGS := $(CFLAGS) -Iinclude -Itests -DUF_VERSION='"$(VERSION)"'

all: $(B)/$(SONAME) $(B)/libufault.a $(B)/libufault.pc $(TOOLS)

LIB_HDRS := $(wildcard src/*.h src/*/*.h) include/ufault.h
$(B)/pic/%.o: src/%.c $(LIB_HDRS) | $(B)/pic
	$(quiet) CC $<
	@mkdir -p $(@D)
	$(Q)$(CC) $(LIBCFLAGS) -c -o $@ $<

# (a LOCKDEP=1 build exports lockdep.c's calls too, for libufault-redis)
$(B)/$(SONAME): $(LIB_PIC) src/libufault.map src/lockdep.map
	$(quiet) LD $@
	$(Q)$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/libufault.map \
		$(LOCKDEP_MAP) \
		-Wl,-z,defs -o $@ $(LIB_PIC) $(LDFLAGS)
	$(Q)ln -sf $(SONAME) $(B)/libufault.so
$(B)/libufault.a: $(LIB_PIC)
	$(quiet) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/libufault.pc: libufault.pc.in VERSION Makefile | $(B)
	$(quiet) GEN $@
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

$(B)/%: tools/%.c src/lib/compat.h $(B)/libufault.a include/ufault.h VERSION
	$(quiet) CCLD $@
	$(Q)$(CC) $(APP_CFLAGS) -o $@ $< $(B)/libufault.a $(LDFLAGS) -lm

# ufault-serve, ufault-cp and ufault-bench (its serve-restore-http row)
# link the HTTP store and libcurl, or without libcurl tools/http/no-http.c,
# which says how to get it when asked for.
ifeq ($(HTTP),yes)
HTTP_TOOL_DEPS := $(B)/libufault-http.a include/ufault-http.h tools/http/bench-http.c tools/http/bench-http.h
HTTP_TOOL_LINK  = $(if $(filter ufault-bench,$*),tools/http/bench-http.c) \
	$(if $(filter ufault-serve ufault-cp ufault-bench ufault-stress,$*),$(B)/libufault-http.a $(CURL_LIBS))
else
HTTP_TOOL_DEPS := tools/http/no-http.c include/ufault-http.h tools/http/bench-http.h
HTTP_TOOL_LINK  = $(if $(filter ufault-serve ufault-cp ufault-bench ufault-stress,$*),tools/http/no-http.c)
endif

# Tools that reach a Redis Cluster (ufault-cp; ufault-stress and ufault-bench
# with --store URL; ufault-serve with a redis:// SOURCE) link the Redis store
# and hiredis.  Without hiredis, those three link tools/redis/no-redis.c
# instead, which says how to get the Redis store when one is asked for.
ifeq ($(HIREDIS),yes)
REDIS_TOOLS := $(B)/ufault-cp $(B)/ufault-stress $(B)/ufault-bench $(B)/ufault-serve
$(REDIS_TOOLS): $(B)/%: tools/%.c tools/redis/bench-redis.c tools/redis/bench-redis.h tools/bench/attach.c tools/bench/bare.c tools/bench/bare.h tools/bench/http-store.c src/lib/compat.h src/engine/uffd_holes.h src/lib/scm.h \
		tools/serve/supervisor.c tools/serve/supervisor.h tools/serve/refuse.c tools/serve/refuse.h \
		tools/serve/bench-serve.c tools/serve/bench-serve.h \
		$(B)/libufault-redis.a $(B)/libufault.a include/ufault.h include/ufault-redis.h VERSION $(PACK_DEPS) \
		$(HTTP_TOOL_DEPS)
	$(quiet) CCLD $@
	$(Q)$(CC) $(APP_CFLAGS) -Itools/redis -o $@ $< \
		$(if $(filter ufault-bench,$*),tools/redis/bench-redis.c tools/serve/bench-serve.c tools/bench/attach.c tools/bench/bare.c tools/bench/http-store.c) \
		$(if $(filter ufault-serve,$*),tools/serve/supervisor.c tools/serve/refuse.c) \
		$(if $(filter ufault-serve ufault-bench,$*),$(PACK_LINK)) \
		$(B)/libufault-redis.a $(HTTP_TOOL_LINK) $(B)/libufault.a $(LDFLAGS) $(or $(HIREDIS_LIBS),-lhiredis) -lm
else
NOREDIS_TOOLS := $(B)/ufault-stress $(B)/ufault-bench $(B)/ufault-serve $(B)/ufault-cp
$(NOREDIS_TOOLS): $(B)/%: tools/%.c tools/redis/no-redis.c tools/redis/bench-redis.h tools/bench/attach.c tools/bench/bare.c tools/bench/bare.h tools/bench/http-store.c src/lib/compat.h src/engine/uffd_holes.h src/lib/scm.h \
		tools/serve/supervisor.c tools/serve/supervisor.h tools/serve/refuse.c tools/serve/refuse.h \
		tools/serve/bench-serve.c tools/serve/bench-serve.h \
		$(B)/libufault.a include/ufault.h include/ufault-redis.h VERSION $(PACK_DEPS) \
		$(HTTP_TOOL_DEPS)
	$(quiet) CCLD $@
	$(Q)$(CC) $(APP_CFLAGS) -Itools/redis -o $@ $< tools/redis/no-redis.c \
		$(if $(filter ufault-bench,$*),tools/serve/bench-serve.c tools/bench/attach.c tools/bench/bare.c tools/bench/http-store.c) \
		$(if $(filter ufault-serve,$*),tools/serve/supervisor.c tools/serve/refuse.c) \
		$(if $(filter ufault-serve ufault-bench,$*),$(PACK_LINK)) \
		$(HTTP_TOOL_LINK) $(B)/libufault.a $(LDFLAGS) -lm
endif

# the tests' helpers are compiled once, not into each test
$(B)/tests/helpers.o: tests/helpers.c tests/helpers.h include/ufault.h | $(B)/tests
	$(quiet) CC $<
	$(Q)$(CC) $(APP_CFLAGS) -c -o $@ $<

$(B)/tests/%: tests/%.c $(B)/tests/helpers.o $(wildcard tests/*.h) $(B)/libufault.a include/ufault.h | $(B)/tests
	$(quiet) CCLD $@
	$(Q)$(CC) $(APP_CFLAGS) -o $@ $< $(B)/tests/helpers.o $(B)/libufault.a $(LDFLAGS) -lm

$(B)/examples/%: examples/%.c $(B)/libufault.a include/ufault.h | $(B)/examples
	$(quiet) CCLD $@
	$(Q)$(CC) $(APP_CFLAGS) -Wno-error=deprecated-declarations -o $@ $< $(B)/libufault.a $(LDFLAGS)

$(B) $(B)/pic $(B)/tests $(B)/examples:
	$(Q)mkdir -p $@

tests: all $(TESTS) $(EXAMPLES)

# `make test` first makes sure of what the Redis tests need (redis/deps.sh
# installs it as root, or says what is missing), then runs everything in a
# fresh make, which finds hiredis if deps.sh just installed it.  The whole
# run has a throwaway Redis Cluster (tests/redis-cluster) for the tests that
# need one; without redis-server or hiredis those tests skip, and the run
# says so first.
test:
ifneq ($(HIREDIS_OFF),)
	@echo "make test: HIREDIS=no: the Redis tests will be skipped"
else
	@redis/deps.sh || echo "make test: the Redis tests will be skipped (see the line above)"
endif
	@$(MAKE) --no-print-directory test-run
# the test scripts that run make (tests/install-*.sh) get make's options
# without the jobserver's pipes, which only $(MAKE) lines are handed
test-run: MAKEFLAGS_TESTS = MAKEFLAGS='$(filter-out --jobserver%,$(MAKEFLAGS))'
test-run: tests
	@if [ "$(HIREDIS)" = yes ] && command -v redis-server >/dev/null 2>&1 && \
	    command -v redis-cli >/dev/null 2>&1; then \
		$(MAKEFLAGS_TESTS) B=$(B) CC="$(CC)" SAN="$(SAN)" tests/redis-cluster run \
			tests/run-tests $(TESTS) $(EXAMPLES) $(SCRIPTS) $(REDIS_TESTS) $(HTTP_TESTS); \
	else \
		echo "make test: no Redis Cluster for this run (hiredis: $(HIREDIS);" \
			"redis-server: $$(command -v redis-server || echo missing)):" \
			"the redis-* tests skip"; \
		$(MAKEFLAGS_TESTS) B=$(B) CC="$(CC)" SAN="$(SAN)" tests/run-tests $(TESTS) $(EXAMPLES) $(SCRIPTS) $(HTTP_TESTS); \
	fi

# the main job: what this machine allows, the tour, then the race finder
# against ufault and against the kernel's own mmap
run: all
	$(Q)$(B)/ufault-info --quiet || true
	$(Q)$(B)/ufault-tour
	$(Q)$(B)/ufault-stress --seconds $(STRESS_SECONDS)

# ---- install and uninstall -------------------------------------------------
# INSTALLED is every file `make install` can put under $(PREFIX), the Redis
# store's and every tool's whether this build has them or not: `make
# uninstall` removes them all, then the directories install made (it writes
# them into share/ufault/dirs) once they are empty again.
DEST := $(DESTDIR)$(PREFIX)
INSTALL_DIRS := bin include lib lib/pkgconfig share share/man share/man/man1 \
	share/man/man3 share/man/man7 share/ufault
INSTALLED = include/ufault.h lib/$(SONAME) lib/libufault.so lib/libufault.a \
	lib/pkgconfig/ufault.pc $(ALL_TOOLS:%=bin/%) $(ALL_TOOLS:%=share/man/man1/%.1) \
	$(patsubst man/%,share/man/%,$(wildcard man/man3/*.3 man/man7/*.7)) \
	include/ufault-redis.h lib/$(REDIS_SONAME) lib/libufault-redis.so \
	lib/libufault-redis.a lib/pkgconfig/ufault-redis.pc \
	bin/ufault-redis-cluster share/man/man1/ufault-redis-cluster.1 \
	include/ufault-pack.h lib/$(PACK_SONAME) lib/libufault-pack.so \
	lib/libufault-pack.a lib/pkgconfig/ufault-pack.pc bin/ufault-pack share/man/man1/ufault-pack.1 \
	include/ufault-http.h lib/$(HTTP_SONAME) lib/libufault-http.so \
	lib/libufault-http.a lib/pkgconfig/ufault-http.pc
ALL_TOOLS := $(patsubst tools/%.c,%,$(wildcard tools/*.c))

install-dirs:
	$(Q)made=; for d in $(INSTALL_DIRS); do [ -d "$(DEST)/$$d" ] || made="$$made $$d"; done; \
		install -d $(INSTALL_DIRS:%="$(DEST)/%") && \
		for d in $$made; do echo $$d; done >> "$(DEST)/share/ufault/dirs"

install: all install-dirs
	$(quiet) INSTALL "$(DEST)"
	$(Q)install -m 644 include/ufault.h $(DEST)/include/
	$(Q)install -m 755 $(B)/$(SONAME) $(DEST)/lib/
	$(Q)ln -sf $(SONAME) $(DEST)/lib/libufault.so
	$(Q)install -m 644 $(B)/libufault.a $(DEST)/lib/
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' libufault.pc.in \
		> $(DEST)/lib/pkgconfig/ufault.pc
	$(Q)$(if $(TOOLS),install -m 755 $(TOOLS) $(DEST)/bin/)
	$(Q)install -m 644 $(TOOLS:$(B)/%=man/man1/%.1) $(DEST)/share/man/man1/
	$(Q)install -m 644 $(filter-out man/man3/uf_redis_% man/man3/uf_pack_% man/man3/uf_http_%,$(wildcard man/man3/*.3)) \
		$(DEST)/share/man/man3/
	$(Q)install -m 644 man/man7/*.7 $(DEST)/share/man/man7/

uninstall:
	$(quiet) UNINST "$(DEST)"
	$(Q)rm -f $(INSTALLED:%="$(DEST)/%")
	$(Q)if [ -f "$(DEST)/share/ufault/dirs" ]; then \
		dirs=$$(sort -ru "$(DEST)/share/ufault/dirs"); rm -f "$(DEST)/share/ufault/dirs"; \
		for d in $$dirs; do rmdir "$(DEST)/$$d" 2>/dev/null || true; done; \
	fi

clean:
	rm -rf build build-*

# ---- Redis: libufault-redis, objects in a Redis Cluster -------------------
# A library of its own, so that the core never depends on hiredis.  Built
# when hiredis is present (HIREDIS=yes); otherwise `make` says how to get it.
# redis/deps.sh (run by `make test` only) installs redis-server,
# libhiredis-dev and pkg-config when missing (as root), or says what to run.
REDIS_SONAME := libufault-redis.so.$(SOVERSION)
REDIS_SRC    := $(wildcard redis/*.c)
REDIS_PIC    := $(REDIS_SRC:redis/%.c=$(B)/redis-pic/%.o)
REDIS_TESTS  := $(patsubst tests/%.c,$(B)/tests/%,$(wildcard tests/redis-*.c))
REDIS_HDRS   := redis/internal.h include/ufault-redis.h include/ufault.h src/lib/lockdep.h src/lib/lockorder.h
HIREDIS_CFLAGS = $(shell pkg-config --cflags hiredis 2>/dev/null || echo -I/usr/include/hiredis)
HIREDIS_LIBS   = $(shell pkg-config --libs hiredis 2>/dev/null || echo -lhiredis)

ifeq ($(HIREDIS),yes)
all: redis
tests: redis $(REDIS_TESTS)
install: install-redis
else
REDIS_TESTS :=
# said only when hiredis was looked for and not found: `make HIREDIS=no`
# is the user's choice, and gets no message
ifeq ($(origin HIREDIS),file)
all: redis-missing
endif
endif

redis: $(B)/$(REDIS_SONAME) $(B)/libufault-redis.a $(B)/ufault-redis.pc

redis-missing:
	@echo "make: hiredis not found: built without the Redis store (libufault-redis," \
		"ufault-cp, --store); to build it, install hiredis" \
		"(Debian/Ubuntu: apt-get install libhiredis-dev) and run make again"

$(B)/redis-pic/%.o: redis/%.c $(REDIS_HDRS) | $(B)/redis-pic
	$(quiet) CC $<
	$(Q)$(CC) $(LIBCFLAGS) $(HIREDIS_CFLAGS) -c -o $@ $<

$(B)/$(REDIS_SONAME): $(REDIS_PIC) redis/libufault-redis.map $(B)/$(SONAME)
	$(quiet) LD $@
	$(Q)$(CC) -shared -Wl,-soname,$(REDIS_SONAME) -Wl,--version-script=redis/libufault-redis.map \
		-Wl,-z,defs -o $@ $(REDIS_PIC) -L$(B) -l:$(SONAME) $(HIREDIS_LIBS) $(LDFLAGS)
	$(Q)ln -sf $(REDIS_SONAME) $(B)/libufault-redis.so
$(B)/libufault-redis.a: $(REDIS_PIC)
	$(quiet) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/ufault-redis.pc: ufault-redis.pc.in VERSION Makefile | $(B)
	$(quiet) GEN $@
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

$(B)/tests/redis-%: tests/redis-%.c $(B)/tests/helpers.o tests/helpers.h $(B)/libufault-redis.a $(B)/libufault.a $(REDIS_HDRS) | $(B)/tests
	$(quiet) CCLD $@
	$(Q)$(CC) $(APP_CFLAGS) -o $@ $< $(B)/tests/helpers.o $(B)/libufault-redis.a $(B)/libufault.a $(HIREDIS_LIBS) $(LDFLAGS) -lm

# what each way of keeping pages in Redis costs (docs/redis.md, Layout):
# tests/redis-cluster run build/redis-layout
redis-layout: $(B)/redis-layout
$(B)/redis-layout: redis/bench/layout.c | $(B)
	$(quiet) CCLD $@
	$(Q)$(CC) $(CFLAGS) $(HIREDIS_CFLAGS) -o $@ $< $(HIREDIS_LIBS) $(LDFLAGS)

$(B)/redis-pic:
	$(Q)mkdir -p $@

install-redis: redis install-dirs
	$(Q)install -m 644 man/man3/uf_redis_*.3 $(DEST)/share/man/man3/
	$(Q)sed 's|^UF_VERSION=.*|UF_VERSION=$(VERSION)|' tools/ufault-redis-cluster \
		> $(DEST)/bin/ufault-redis-cluster && chmod 755 $(DEST)/bin/ufault-redis-cluster
	$(Q)install -m 644 man/man1/ufault-redis-cluster.1 $(DEST)/share/man/man1/
	$(Q)install -m 644 include/ufault-redis.h $(DEST)/include/
	$(Q)install -m 755 $(B)/$(REDIS_SONAME) $(DEST)/lib/
	$(Q)ln -sf $(REDIS_SONAME) $(DEST)/lib/libufault-redis.so
	$(Q)install -m 644 $(B)/libufault-redis.a $(DEST)/lib/
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' ufault-redis.pc.in \
		> $(DEST)/lib/pkgconfig/ufault-redis.pc

# ---- Pack: libufault-pack, packed (zstd-compressed) snapshots -------------
# A library of its own, so that the core never depends on libzstd.  Built
# when libzstd is present (PACK=yes); without it the pack tests skip and
# ufault-serve refuses a packed SOURCE, saying why.
PACK_SONAME := libufault-pack.so.$(SOVERSION)
PACK_SRC    := $(wildcard pack/*.c)
PACK_PIC    := $(PACK_SRC:pack/%.c=$(B)/pack-pic/%.o)
PACK_HDRS   := pack/internal.h include/ufault-pack.h include/ufault.h src/lib/lockdep.h src/lib/lockorder.h

ifeq ($(PACK),yes)
all: pack
install: install-pack
else ifeq ($(PACK_SEARCHED),yes)
# said only when libzstd was looked for and not found, not after PACK=no
all: pack-missing
endif

pack: $(B)/$(PACK_SONAME) $(B)/libufault-pack.a $(B)/ufault-pack.pc

pack-missing:
	@echo "make: libzstd not found (or PACK=no): built without packed snapshots" \
		"(libufault-pack, ufault-pack); to build them, install libzstd" \
		"(Debian/Ubuntu: apt-get install libzstd-dev) and run make again"

$(B)/pack-pic/%.o: pack/%.c $(PACK_HDRS) | $(B)/pack-pic
	$(quiet) CC $<
	$(Q)$(CC) $(LIBCFLAGS) -c -o $@ $<

$(B)/$(PACK_SONAME): $(PACK_PIC) pack/libufault-pack.map $(B)/$(SONAME)
	$(quiet) LD $@
	$(Q)$(CC) -shared -Wl,-soname,$(PACK_SONAME) -Wl,--version-script=pack/libufault-pack.map \
		-Wl,-z,defs -o $@ $(PACK_PIC) -L$(B) -l:$(SONAME) $(ZSTD_LIBS) $(LDFLAGS)
	$(Q)ln -sf $(PACK_SONAME) $(B)/libufault-pack.so
$(B)/libufault-pack.a: $(PACK_PIC)
	$(quiet) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/ufault-pack.pc: ufault-pack.pc.in VERSION Makefile | $(B)
	$(quiet) GEN $@
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

$(B)/ufault-pack: tools/ufault-pack.c $(B)/libufault-pack.a $(B)/libufault.a $(PACK_HDRS) VERSION
	$(quiet) CCLD $@
	$(Q)$(CC) $(APP_CFLAGS) -o $@ $< $(B)/libufault-pack.a $(B)/libufault.a $(LDFLAGS) $(ZSTD_LIBS)

# the pack tests link the library, or the stub that makes them skip
$(B)/tests/pack-%: tests/pack-%.c $(B)/tests/helpers.o $(wildcard tests/*.h) $(PACK_DEPS) $(B)/libufault.a include/ufault.h | $(B)/tests
	$(quiet) CCLD $@
	$(Q)$(CC) $(APP_CFLAGS) -Itools/pack -o $@ $< $(B)/tests/helpers.o $(PACK_LINK) $(B)/libufault.a $(LDFLAGS) -lm

$(B)/pack-pic:
	$(Q)mkdir -p $@

install-pack: pack install-dirs
	$(Q)install -m 644 man/man3/uf_pack_*.3 $(DEST)/share/man/man3/
	$(Q)install -m 644 include/ufault-pack.h $(DEST)/include/
	$(Q)install -m 755 $(B)/$(PACK_SONAME) $(DEST)/lib/
	$(Q)ln -sf $(PACK_SONAME) $(DEST)/lib/libufault-pack.so
	$(Q)install -m 644 $(B)/libufault-pack.a $(DEST)/lib/
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' ufault-pack.pc.in \
		> $(DEST)/lib/pkgconfig/ufault-pack.pc

# ---- HTTP: libufault-http, read-only objects served over HTTP(S) ------------
# A library of its own, so that the core never depends on libcurl.  Built
# when libcurl is present (HTTP=yes).  Its tests start their own nginx
# (tests/http-test.h) and skip without one; built without libcurl, they
# are built as skips.
HTTP_SONAME := libufault-http.so.$(SOVERSION)
HTTP_SRC    := $(wildcard http/*.c)
HTTP_PIC    := $(HTTP_SRC:http/%.c=$(B)/http-pic/%.o)
HTTP_TESTS  := $(patsubst tests/%.c,$(B)/tests/%,$(wildcard tests/http-*.c))
HTTP_HDRS   := http/internal.h include/ufault-http.h include/ufault.h src/lib/lockdep.h src/lib/lockorder.h
CURL_CFLAGS  = $(shell pkg-config --cflags libcurl 2>/dev/null)
CURL_LIBS    = $(shell pkg-config --libs libcurl 2>/dev/null || echo -lcurl)

tests: $(HTTP_TESTS)
ifeq ($(HTTP),yes)
all: http
install: install-http
$(B)/tests/http-%: tests/http-%.c $(B)/tests/helpers.o $(wildcard tests/*.h) $(B)/libufault-http.a $(B)/libufault.a $(HTTP_HDRS) | $(B)/tests
	$(quiet) CCLD $@
	$(Q)$(CC) $(APP_CFLAGS) -o $@ $< $(B)/tests/helpers.o $(B)/libufault-http.a $(B)/libufault.a $(CURL_LIBS) $(LDFLAGS) -lm
else
all: http-missing
$(B)/tests/http-%: tests/http-%.c $(B)/tests/helpers.o $(wildcard tests/*.h) $(B)/libufault.a | $(B)/tests
	$(quiet) CCLD $@
	$(Q)$(CC) $(APP_CFLAGS) -DUT_NO_HTTP -o $@ $< $(B)/tests/helpers.o $(B)/libufault.a $(LDFLAGS) -lm
endif
http: $(B)/$(HTTP_SONAME) $(B)/libufault-http.a $(B)/ufault-http.pc

http-missing:
	@echo "make: libcurl not found: built without the HTTP store (libufault-http," \
		"http(s):// sources); to build it, install libcurl" \
		"(Debian/Ubuntu: apt-get install libcurl4-openssl-dev) and run make again"

$(B)/http-pic/%.o: http/%.c $(HTTP_HDRS) | $(B)/http-pic
	$(quiet) CC $<
	$(Q)$(CC) $(LIBCFLAGS) $(CURL_CFLAGS) -c -o $@ $<

$(B)/$(HTTP_SONAME): $(HTTP_PIC) http/libufault-http.map $(B)/$(SONAME)
	$(quiet) LD $@
	$(Q)$(CC) -shared -Wl,-soname,$(HTTP_SONAME) -Wl,--version-script=http/libufault-http.map \
		-Wl,-z,defs -o $@ $(HTTP_PIC) -L$(B) -l:$(SONAME) $(CURL_LIBS) $(LDFLAGS)
	$(Q)ln -sf $(HTTP_SONAME) $(B)/libufault-http.so
$(B)/libufault-http.a: $(HTTP_PIC)
	$(quiet) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^
$(B)/ufault-http.pc: ufault-http.pc.in VERSION Makefile | $(B)
	$(quiet) GEN $@
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

$(B)/http-pic:
	$(Q)mkdir -p $@

install-http: http install-dirs
	$(Q)install -m 644 man/man3/uf_http_*.3 $(DEST)/share/man/man3/
	$(Q)install -m 644 include/ufault-http.h $(DEST)/include/
	$(Q)install -m 755 $(B)/$(HTTP_SONAME) $(DEST)/lib/
	$(Q)ln -sf $(HTTP_SONAME) $(DEST)/lib/libufault-http.so
	$(Q)install -m 644 $(B)/libufault-http.a $(DEST)/lib/
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' ufault-http.pc.in \
		> $(DEST)/lib/pkgconfig/ufault-http.pc

.PHONY: all tests test test-run run install install-dirs uninstall clean redis redis-missing \
	install-redis redis-layout pack pack-missing install-pack http http-missing install-http
.SECONDARY:
