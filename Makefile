# ufault - see README.md.  `make`, `make test`, `make run`,
# `make install PREFIX=DIR`; `make SAN=address|undefined|thread test`
# builds into build-$(SAN)/ with that sanitizer.

VERSION   := 0.1.0
SOVERSION := 0
PREFIX    ?= /usr/local
CC        ?= cc
SAN       ?=
STRESS_SECONDS ?= 30

ifeq ($(SAN),)
B ?= build
else
B ?= build-$(SAN)
SANFLAGS := -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

WARN    := -Wall -Wextra -Werror
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 $(WARN) -pthread $(SANFLAGS)
LDFLAGS += -pthread $(SANFLAGS)
LIBCFLAGS := $(CFLAGS) -fPIC -fvisibility=hidden -Iinclude

LIB_SRC := $(wildcard src/*.c)
LIB_PIC := $(LIB_SRC:src/%.c=$(B)/pic/%.o)
LIB_OBJ := $(LIB_SRC:src/%.c=$(B)/obj/%.o)
SONAME  := libufault.so.$(SOVERSION)

TOOLS   := $(patsubst tools/%.c,$(B)/%,$(wildcard tools/*.c))
TESTS   := $(patsubst tests/%.c,$(B)/tests/%,$(filter-out tests/helpers.c,$(wildcard tests/*.c)))
EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
SCRIPTS := $(wildcard tests/*.sh)

# the tests and tools link the static library, so they run from the tree
APP_CFLAGS := $(CFLAGS) -Iinclude -Itests

all: $(B)/$(SONAME) $(B)/libufault.a $(B)/libufault.pc $(TOOLS)

$(B)/pic/%.o: src/%.c src/internal.h src/compat.h include/ufault.h | $(B)/pic
	$(CC) $(LIBCFLAGS) -c -o $@ $<
$(B)/obj/%.o: src/%.c src/internal.h src/compat.h include/ufault.h | $(B)/obj
	$(CC) $(LIBCFLAGS) -c -o $@ $<

$(B)/$(SONAME): $(LIB_PIC) src/libufault.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/libufault.map \
		-Wl,-z,defs -o $@ $(LIB_PIC) $(LDFLAGS)
	ln -sf $(SONAME) $(B)/libufault.so
$(B)/libufault.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/libufault.pc: libufault.pc.in Makefile | $(B)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

$(B)/%: tools/%.c $(B)/libufault.a include/ufault.h
	$(CC) $(APP_CFLAGS) -o $@ $< $(B)/libufault.a $(LDFLAGS) -lm

$(B)/tests/%: tests/%.c tests/helpers.c tests/helpers.h $(B)/libufault.a include/ufault.h | $(B)/tests
	$(CC) $(APP_CFLAGS) -o $@ $< tests/helpers.c $(B)/libufault.a $(LDFLAGS) -lm

$(B)/examples/%: examples/%.c $(B)/libufault.a include/ufault.h | $(B)/examples
	$(CC) $(APP_CFLAGS) -Wno-error=deprecated-declarations -o $@ $< $(B)/libufault.a $(LDFLAGS)

$(B) $(B)/pic $(B)/obj $(B)/tests $(B)/examples:
	mkdir -p $@

tests: all $(TESTS) $(EXAMPLES)

test: tests
	B=$(B) CC="$(CC)" SAN="$(SAN)" tests/run-tests $(TESTS) $(EXAMPLES) $(SCRIPTS)

# the main job: what this machine allows, the tour, then the race finder
# against ufault and against the kernel's own mmap
run: all
	$(B)/ufault-info --quiet || true
	$(B)/ufault-tour
	$(B)/ufault-stress --seconds $(STRESS_SECONDS)

install: all
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man3 $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 644 include/ufault.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(B)/$(SONAME) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libufault.so
	install -m 644 $(B)/libufault.a $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' libufault.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/ufault.pc
	$(if $(TOOLS),install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/)
	-install -m 644 man/man3/*.3 $(DESTDIR)$(PREFIX)/share/man/man3/ 2>/dev/null
	-install -m 644 man/man7/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/ 2>/dev/null

clean:
	rm -rf build build-*

.PHONY: all tests test run install clean
.SECONDARY:
