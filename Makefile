# ufault - see README.md.  `make`, `make test`, `make run`,
# `make install PREFIX=DIR`; `make SAN=address|undefined|thread test`
# builds into build-$(SAN)/ with that sanitizer; `make LOCKDEP=1 test` checks
# the lock order as it runs (src/lockdep.c).
#
# The core (libufault, ufault-info, ufault-tour, ufault-stress,
# ufault-bench) needs only the C library.  The Redis store (libufault-redis,
# ufault-cp, the --store option of ufault-stress and ufault-bench) is built
# when hiredis is found; `make HIREDIS=no` leaves it out on purpose.
# Nothing here installs packages except `make test` run as root (it calls
# redis/deps.sh for the Redis tests' servers and hiredis).

VERSION   := 0.4.0
SOVERSION := 0
PREFIX    ?= /usr/local
CC        ?= cc
SAN       ?=
STRESS_SECONDS ?= 30

# LOCKDEP=1: check the lock order (src/lockdep.c) as the library runs,
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
LIBCFLAGS := $(CFLAGS) $(LOCKDEP_FLAGS) -fPIC -fvisibility=hidden -Iinclude

LIB_SRC := $(wildcard src/*.c)
LIB_PIC := $(LIB_SRC:src/%.c=$(B)/pic/%.o)
LIB_OBJ := $(LIB_SRC:src/%.c=$(B)/obj/%.o)
SONAME  := libufault.so.$(SOVERSION)

ifeq ($(origin HIREDIS),undefined)
HIREDIS := $(shell pkg-config --exists hiredis 2>/dev/null && echo yes || \
	{ test -f /usr/include/hiredis/hiredis.h && echo yes || echo no; })
endif

# ufault-cp exists only to reach a Redis Cluster: without hiredis it is not built
TOOLS   := $(patsubst tools/%.c,$(B)/%,$(wildcard tools/*.c))
ifneq ($(HIREDIS),yes)
TOOLS   := $(filter-out $(B)/ufault-cp,$(TOOLS))
endif
TESTS   := $(patsubst tests/%.c,$(B)/tests/%,$(filter-out tests/helpers.c tests/redis-%.c,$(wildcard tests/*.c)))
EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
SCRIPTS := $(wildcard tests/*.sh)

# the tests and tools link the static library, so they run from the tree
APP_CFLAGS := $(CFLAGS) -Iinclude -Itests

all: $(B)/$(SONAME) $(B)/libufault.a $(B)/libufault.pc $(TOOLS)

LIB_HDRS := src/internal.h src/compat.h src/lockdep.h src/lockorder.h include/ufault.h
$(B)/pic/%.o: src/%.c $(LIB_HDRS) | $(B)/pic
	$(CC) $(LIBCFLAGS) -c -o $@ $<
$(B)/obj/%.o: src/%.c $(LIB_HDRS) | $(B)/obj
	$(CC) $(LIBCFLAGS) -c -o $@ $<

# (a LOCKDEP=1 build exports lockdep.c's calls too, for libufault-redis)
$(B)/$(SONAME): $(LIB_PIC) src/libufault.map src/lockdep.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/libufault.map \
		$(LOCKDEP_MAP) \
		-Wl,-z,defs -o $@ $(LIB_PIC) $(LDFLAGS)
	ln -sf $(SONAME) $(B)/libufault.so
$(B)/libufault.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/libufault.pc: libufault.pc.in Makefile | $(B)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

$(B)/%: tools/%.c src/compat.h $(B)/libufault.a include/ufault.h
	$(CC) $(APP_CFLAGS) -o $@ $< $(B)/libufault.a $(LDFLAGS) -lm

# Tools that reach a Redis Cluster (ufault-cp; ufault-stress and ufault-bench
# with --store URL; ufault-serve with a redis:// SOURCE) link the Redis store
# and hiredis.  Without hiredis, those three link tools/redis/no-redis.c
# instead, which says how to get the Redis store when one is asked for.
ifeq ($(HIREDIS),yes)
REDIS_TOOLS := $(B)/ufault-cp $(B)/ufault-stress $(B)/ufault-bench $(B)/ufault-serve
$(REDIS_TOOLS): $(B)/%: tools/%.c tools/redis/bench-redis.c tools/redis/bench-redis.h tools/bench/attach.c tools/bench/bare.c tools/bench/bare.h src/compat.h \
		tools/serve/supervisor.c tools/serve/supervisor.h \
		tools/serve/bench-serve.c tools/serve/bench-serve.h \
		$(B)/libufault-redis.a $(B)/libufault.a include/ufault.h include/ufault-redis.h
	$(CC) $(APP_CFLAGS) -Itools/redis -o $@ $< \
		$(if $(filter ufault-bench,$*),tools/redis/bench-redis.c tools/serve/bench-serve.c tools/bench/attach.c tools/bench/bare.c) \
		$(if $(filter ufault-serve,$*),tools/serve/supervisor.c) \
		$(B)/libufault-redis.a $(B)/libufault.a $(LDFLAGS) $(or $(HIREDIS_LIBS),-lhiredis) -lm
else
NOREDIS_TOOLS := $(B)/ufault-stress $(B)/ufault-bench $(B)/ufault-serve
$(NOREDIS_TOOLS): $(B)/%: tools/%.c tools/redis/no-redis.c tools/redis/bench-redis.h tools/bench/attach.c tools/bench/bare.c tools/bench/bare.h src/compat.h \
		tools/serve/supervisor.c tools/serve/supervisor.h \
		tools/serve/bench-serve.c tools/serve/bench-serve.h \
		$(B)/libufault.a include/ufault.h include/ufault-redis.h
	$(CC) $(APP_CFLAGS) -Itools/redis -o $@ $< tools/redis/no-redis.c \
		$(if $(filter ufault-bench,$*),tools/serve/bench-serve.c tools/bench/attach.c tools/bench/bare.c) \
		$(if $(filter ufault-serve,$*),tools/serve/supervisor.c) \
		$(B)/libufault.a $(LDFLAGS) -lm
endif

$(B)/tests/%: tests/%.c tests/helpers.c $(wildcard tests/*.h) $(B)/libufault.a include/ufault.h | $(B)/tests
	$(CC) $(APP_CFLAGS) -o $@ $< tests/helpers.c $(B)/libufault.a $(LDFLAGS) -lm

$(B)/examples/%: examples/%.c $(B)/libufault.a include/ufault.h | $(B)/examples
	$(CC) $(APP_CFLAGS) -Wno-error=deprecated-declarations -o $@ $< $(B)/libufault.a $(LDFLAGS)

$(B) $(B)/pic $(B)/obj $(B)/tests $(B)/examples:
	mkdir -p $@

tests: all $(TESTS) $(EXAMPLES)

# `make test` first makes sure of what the Redis tests need (redis/deps.sh
# installs it as root, or says what is missing), then runs everything in a
# fresh make, which finds hiredis if deps.sh just installed it.  The whole
# run has a throwaway Redis Cluster (tests/redis-cluster) for the tests that
# need one; without redis-server or hiredis those tests skip, and the run
# says so first.
test:
ifeq ($(origin HIREDIS)$(HIREDIS),command lineno)
	@echo "make test: HIREDIS=no: the Redis tests will be skipped"
else
	@redis/deps.sh || echo "make test: the Redis tests will be skipped (see the line above)"
endif
	@$(MAKE) --no-print-directory test-run
test-run: tests
	@if [ "$(HIREDIS)" = yes ] && command -v redis-server >/dev/null 2>&1 && \
	    command -v redis-cli >/dev/null 2>&1; then \
		B=$(B) CC="$(CC)" SAN="$(SAN)" tests/redis-cluster run \
			tests/run-tests $(TESTS) $(EXAMPLES) $(SCRIPTS) $(REDIS_TESTS); \
	else \
		echo "make test: no Redis Cluster for this run (hiredis: $(HIREDIS);" \
			"redis-server: $$(command -v redis-server || echo missing)):" \
			"the redis-* tests skip"; \
		B=$(B) CC="$(CC)" SAN="$(SAN)" tests/run-tests $(TESTS) $(EXAMPLES) $(SCRIPTS); \
	fi

# the main job: what this machine allows, the tour, then the race finder
# against ufault and against the kernel's own mmap
run: all
	$(B)/ufault-info --quiet || true
	$(B)/ufault-tour
	$(B)/ufault-stress --seconds $(STRESS_SECONDS)

install: all
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man3 $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 644 include/ufault.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(B)/$(SONAME) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libufault.so
	install -m 644 $(B)/libufault.a $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' libufault.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/ufault.pc
	$(if $(TOOLS),install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/)
	install -m 644 $(TOOLS:$(B)/%=man/man1/%.1) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(filter-out man/man3/uf_redis_%,$(wildcard man/man3/*.3)) \
		$(DESTDIR)$(PREFIX)/share/man/man3/
	install -m 644 man/man7/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/

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
REDIS_OBJ    := $(REDIS_SRC:redis/%.c=$(B)/redis-obj/%.o)
REDIS_TESTS  := $(patsubst tests/%.c,$(B)/tests/%,$(wildcard tests/redis-*.c))
REDIS_HDRS   := redis/internal.h include/ufault-redis.h include/ufault.h src/lockdep.h src/lockorder.h
HIREDIS_CFLAGS = $(shell pkg-config --cflags hiredis 2>/dev/null || echo -I/usr/include/hiredis)
HIREDIS_LIBS   = $(shell pkg-config --libs hiredis 2>/dev/null || echo -lhiredis)

ifeq ($(HIREDIS),yes)
all: redis
tests: redis $(REDIS_TESTS)
install: install-redis
else
REDIS_TESTS :=
all: redis-missing
endif

redis: $(B)/$(REDIS_SONAME) $(B)/libufault-redis.a $(B)/ufault-redis.pc

redis-missing:
	@echo "make: hiredis not found: built without the Redis store (libufault-redis," \
		"ufault-cp, --store); to build it, install hiredis" \
		"(Debian/Ubuntu: apt-get install libhiredis-dev) and run make again"

$(B)/redis-pic/%.o: redis/%.c $(REDIS_HDRS) | $(B)/redis-pic
	$(CC) $(LIBCFLAGS) $(HIREDIS_CFLAGS) -c -o $@ $<
$(B)/redis-obj/%.o: redis/%.c $(REDIS_HDRS) | $(B)/redis-obj
	$(CC) $(LIBCFLAGS) $(HIREDIS_CFLAGS) -c -o $@ $<

$(B)/$(REDIS_SONAME): $(REDIS_PIC) redis/libufault-redis.map $(B)/$(SONAME)
	$(CC) -shared -Wl,-soname,$(REDIS_SONAME) -Wl,--version-script=redis/libufault-redis.map \
		-Wl,-z,defs -o $@ $(REDIS_PIC) -L$(B) -l:$(SONAME) $(HIREDIS_LIBS) $(LDFLAGS)
	ln -sf $(REDIS_SONAME) $(B)/libufault-redis.so
$(B)/libufault-redis.a: $(REDIS_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/ufault-redis.pc: ufault-redis.pc.in Makefile | $(B)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

$(B)/tests/redis-%: tests/redis-%.c tests/helpers.c tests/helpers.h $(B)/libufault-redis.a $(B)/libufault.a $(REDIS_HDRS) | $(B)/tests
	$(CC) $(APP_CFLAGS) -o $@ $< tests/helpers.c $(B)/libufault-redis.a $(B)/libufault.a $(HIREDIS_LIBS) $(LDFLAGS) -lm

# what each way of keeping pages in Redis costs (docs/redis.md, Layout):
# tests/redis-cluster run build/redis-layout
redis-layout: $(B)/redis-layout
$(B)/redis-layout: redis/bench/layout.c | $(B)
	$(CC) $(CFLAGS) $(HIREDIS_CFLAGS) -o $@ $< $(HIREDIS_LIBS) $(LDFLAGS)

$(B)/redis-pic $(B)/redis-obj:
	mkdir -p $@

install-redis: redis
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man3
	install -m 644 man/man3/uf_redis_*.3 $(DESTDIR)$(PREFIX)/share/man/man3/
	install -m 755 tools/ufault-redis-cluster $(DESTDIR)$(PREFIX)/bin/
	install -m 644 man/man1/ufault-redis-cluster.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 include/ufault-redis.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(B)/$(REDIS_SONAME) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(REDIS_SONAME) $(DESTDIR)$(PREFIX)/lib/libufault-redis.so
	install -m 644 $(B)/libufault-redis.a $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' ufault-redis.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/ufault-redis.pc

.PHONY: all tests test test-run run install clean redis redis-missing install-redis redis-layout
.SECONDARY:
