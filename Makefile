# ratelab: one binary, `ratelab`, with subcommands.
# GNU make + pkg-config.  See README.md for the two commands a new user runs.

CC       ?= cc
PREFIX   ?= /usr/local
DESTDIR  ?=
PKGS     := libmicrohttpd libcurl check jansson hiredis

# Missing system packages are installed once, before anything that builds.
NODEPS_GOALS := clean distclean help
ifeq ($(filter-out $(NODEPS_GOALS),$(or $(MAKECMDGOALS),all)),)
else ifneq ($(shell pkg-config --exists $(PKGS) && echo ok),ok)
  $(info make: some of $(PKGS) are missing; running scripts/install-deps)
  DEPS_RC := $(shell scripts/install-deps >&2; echo $$?)
  ifneq ($(DEPS_RC),0)
    $(error scripts/install-deps failed (exit $(DEPS_RC)))
  endif
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs libmicrohttpd libcurl jansson hiredis 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

WARN     := -Wall -Wextra -Wpedantic -Wshadow -Wno-unused-parameter
CFLAGS   ?= -O2 -g
override CFLAGS += -std=c11 $(WARN) -MMD -MP -D_GNU_SOURCE -I. $(PKG_CFLAGS)
override LDLIBS += $(PKG_LIBS) -lpthread -lm
ifneq ($(WERROR),)
  override CFLAGS += -Werror
endif

# (comma must be set before BIN := below expands $(BUILD).)
comma := ,

# SANITIZE=address,undefined or SANITIZE=thread builds into its own tree,
# so sanitized and plain objects never mix.
ifneq ($(SANITIZE),)
  BUILD   ?= build/san-$(subst $(comma),-,$(SANITIZE))
  override CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -O1
  override LDFLAGS += -fsanitize=$(SANITIZE)
  BIN     := $(BUILD)/ratelab
else
  BUILD   ?= build
  BIN     := ratelab
endif

LIB_SRC  := $(sort $(wildcard common/*.c server/*.c hammer/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
MAIN_OBJ := $(BUILD)/main.o
TEST_SRC := $(sort $(wildcard tests/check_*.c)) tests/runner.c tests/testutil.c
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
TEST_BIN := $(BUILD)/check_ratelab
SUITES   := $(patsubst tests/check_%.c,%,$(sort $(wildcard tests/check_*.c)))

.PHONY: all check unit demo bench fuzz soak install uninstall clean help
all: $(BIN)

$(BIN): $(MAIN_OBJ) $(BUILD)/libratelab.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libratelab.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# The runner chains every tests/check_<name>.c, each exposing <name>_suite().
$(BUILD)/suites.h: $(sort $(wildcard tests/check_*.c)) Makefile
	@mkdir -p $(BUILD)
	@{ for s in $(SUITES); do echo "SUITE($$s)"; done; } > $@.tmp && mv $@.tmp $@

$(BUILD)/tests/runner.o: $(BUILD)/suites.h
$(BUILD)/tests/runner.o: override CFLAGS += -I$(BUILD)

$(TEST_BIN): $(TEST_OBJ) $(BUILD)/libratelab.a
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# `make check` runs every Check suite against the binary built here, then the
# script-level tests (lab guide, CLI) in tests/*.sh.  CK_RUN_SUITE=name runs one.
check: $(BIN) $(TEST_BIN)
	RATELAB_BIN=$(abspath $(BIN)) RATELAB_ROOT=$(CURDIR) $(TEST_BIN)
	@set -e; for t in $(sort $(wildcard tests/*.sh)); do \
		echo "== $$t"; RATELAB_BIN=$(abspath $(BIN)) RATELAB_ROOT=$(CURDIR) sh $$t; done

demo: $(BIN)
	RATELAB_BIN=$(abspath $(BIN)) sh scripts/demo

bench: $(BIN) $(BUILD)/bench-hello $(BUILD)/bench-floor $(BUILD)/limiter_bench
	RATELAB_BIN=$(abspath $(BIN)) BUILD=$(BUILD) sh bench/run

# The bare libmicrohttpd baseline that `make bench` compares ratelab serve and hammer against.
$(BUILD)/bench-hello: bench/hello.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LDLIBS)

# A hand-written epoll front answering ratelab's 429 bytes: the floor `make bench` shows
# for leaving libmicrohttpd on the reject path.  Not part of ratelab.
$(BUILD)/bench-floor: bench/floor.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -pthread

fuzz:
	$(MAKE) -f fuzz.mk FUZZ_SECONDS=$(or $(FUZZ_SECONDS),30)

soak: $(BIN)
	RATELAB_BIN=$(abspath $(BIN)) sh bench/soak

install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/ratelab

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/ratelab

clean:
	rm -rf build ratelab

help:
	@echo "targets: all check demo bench fuzz soak install clean"
	@echo "options: SANITIZE=address,undefined|thread WERROR=1 PREFIX=/usr/local DESTDIR="

-include $(LIB_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(TEST_OBJ:.o=.d)

# The limiter microbenchmark: ns per decision (key table + decide), 1 and 2 threads.
# bench/run calls $(BUILD)/limiter_bench; `make limiter-bench` runs it alone.
.PHONY: limiter-bench
$(BUILD)/limiter_bench: $(BUILD)/bench/limiter_bench.o $(BUILD)/libratelab.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

limiter-bench: $(BUILD)/limiter_bench
	$(BUILD)/limiter_bench --limiter all
-include $(BUILD)/bench/limiter_bench.d
