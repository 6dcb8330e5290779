# ratelab: one binary, `ratelab`, with subcommands.
# GNU make + pkg-config.  See README.md for the two commands a new user runs.

CC       ?= cc
PREFIX   ?= /usr/local
DESTDIR  ?=
PKGS     := libmicrohttpd libcurl check jansson hiredis

# `make deps` installs the Debian packages (scripts/install-deps); `demo`, `check` and `bench`
# run it first, so a fresh machine needs only those commands.  Any other goal only builds,
# and stops with a message when a library is missing.
NODEPS_GOALS := deps check demo bench clean distclean help layering sources sources-list
ifneq ($(filter-out $(NODEPS_GOALS),$(or $(MAKECMDGOALS),all)),)
  ifneq ($(shell pkg-config --exists $(PKGS) && echo ok),ok)
    $(error some of $(PKGS) are missing (pkg-config): run `make deps`)
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

# One static library per layer; the layers only point down (make layering):
# lab -> server, hammer -> common.  Every source is listed here: `make sources` (run by
# `make check`) fails naming any .c under common/ server/ hammer/ lab/ that is not.
COMMON_SRC := \
	common/cli.c \
	common/cli_help.c \
	common/cli_output.c \
	common/clock.c \
	common/heap.c \
	common/histogram.c \
	common/httpdate.c \
	common/junit.c \
	common/parse.c \
	common/prng.c \
	common/proc_threads.c \
	common/progress.c \
	common/rate_schedule.c \
	common/retry/retry.c \
	common/retry/retry_after.c \
	common/retry/retry_budget.c \
	common/retry/retry_policy.c \
	common/retry/retry_presets.c \
	common/retry/retry_throttle.c \
	common/series.c \
	common/siphash.c \
	common/suggest.c \
	common/svg.c \
	common/text.c \
	common/ticks.c \
	common/timeline.c
SERVER_SRC := \
	server/capacity.c \
	server/clients.c \
	server/config.c \
	server/faults.c \
	server/handlers/builtin.c \
	server/handlers/dashboard.c \
	server/handlers/events.c \
	server/handlers/occ.c \
	server/handlers/play.c \
	server/handlers/room.c \
	server/handlers/scenario.c \
	server/handlers/scenario_server.c \
	server/handlers/scenario_script.c \
	server/http/addr_count.c \
	server/http/admin.c \
	server/http/backend.c \
	server/http/callbacks.c \
	server/http/client_key.c \
	server/http/conns.c \
	server/http/daemon.c \
	server/http/framing.c \
	server/http/headers.c \
	server/http/hooks.c \
	server/http/lifecycle.c \
	server/http/limited.c \
	server/http/listeners.c \
	server/http/path.c \
	server/http/proxied.c \
	server/http/responses.c \
	server/http/routes.c \
	server/http/sched.c \
	server/limit/limiter.c \
	server/limit/limiter_concurrency.c \
	server/limit/limiter_fixed_window.c \
	server/limit/limiter_gcra.c \
	server/limit/limiter_layered.c \
	server/limit/limiter_leaky_bucket.c \
	server/limit/limiter_none.c \
	server/limit/limiter_sliding_log.c \
	server/limit/limiter_sliding_window.c \
	server/limit/limiter_token_bucket.c \
	server/live.c \
	server/proxy/upstream.c \
	server/proxy/upstream_call.c \
	server/serve.c \
	server/server_args.c \
	server/stats.c \
	server/store/redis_call.c \
	server/store/redis_conn.c \
	server/store/redis_pipe.c \
	server/store/redis_scripts.c \
	server/store/store_memory.c \
	server/store/store_memory_table.c \
	server/store/store_redis.c \
	server/store/store_redis_cli.c
HAMMER_SRC := \
	hammer/engine.c \
	hammer/expect.c \
	hammer/hammer.c \
	hammer/hammer_args.c \
	hammer/join.c \
	hammer/join_collect.c \
	hammer/join_conn.c \
	hammer/loop.c \
	hammer/loopclock_real.c \
	hammer/loopclock_virtual.c \
	hammer/merge.c \
	hammer/plot.c \
	hammer/report.c \
	hammer/result.c \
	hammer/result_codec.c \
	hammer/result_text.c \
	hammer/sim.c \
	hammer/transport_curl.c \
	hammer/transport_sim.c \
	hammer/transport_wire.c \
	hammer/vclient.c \
	hammer/wire.c \
	hammer/wireconn.c \
	hammer/workload.c
LAB_SRC := \
	lab/cases.c \
	lab/cases_row.c \
	lab/herd.c \
	lab/herd_occ.c \
	lab/herd_opts.c \
	lab/herd_report.c \
	lab/report_dir.c \
	lab/simserver.c \
	lab/storm.c \
	lab/storm_args.c \
	lab/storm_report.c \
	lab/storm_sweep.c \
	lab/verify.c \
	lab/verify_args.c \
	lab/verify_baseline.c \
	lab/verify_child.c \
	lab/verify_grade.c \
	lab/verify_grade_retry.c \
	lab/verify_grade_stats.c \
	lab/verify_noise.c \
	lab/verify_report.c \
	lab/verify_run.c
LIB_SRC  := $(COMMON_SRC) $(SERVER_SRC) $(HAMMER_SRC) $(LAB_SRC)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
LAYER_LIBS := $(BUILD)/liblab.a $(BUILD)/libserver.a $(BUILD)/libhammer.a $(BUILD)/libcommon.a
MAIN_OBJ := $(BUILD)/main.o
HARNESS_SRC := tests/harness/testutil.c tests/harness/redis_proc.c tests/harness/upstream_proc.c
UNIT_SRC := $(sort $(wildcard tests/unit/check_*.c))
INTEG_SRC := $(sort $(wildcard tests/integration/check_*.c))
UNIT_BIN := $(BUILD)/check_unit
INTEG_BIN := $(BUILD)/check_integration
TEST_OBJ := $(UNIT_SRC:%.c=$(BUILD)/%.o) $(INTEG_SRC:%.c=$(BUILD)/%.o) $(HARNESS_SRC:%.c=$(BUILD)/%.o) \
            $(BUILD)/unit/runner.o $(BUILD)/integration/runner.o
suites_of = $(patsubst tests/$(1)/check_%.c,%,$(sort $(wildcard tests/$(1)/check_*.c)))

.PHONY: all deps check check-nodeps check-unit check-integration check-shell layering sources sources-list demo demo-nodeps \
	bench bench-nodeps fuzz soak install uninstall clean help
all: $(BIN)

$(BIN): $(MAIN_OBJ) $(LAYER_LIBS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libcommon.a: $(COMMON_SRC:%.c=$(BUILD)/%.o)
$(BUILD)/libserver.a: $(SERVER_SRC:%.c=$(BUILD)/%.o)
$(BUILD)/libhammer.a: $(HAMMER_SRC:%.c=$(BUILD)/%.o)
$(BUILD)/liblab.a: $(LAB_SRC:%.c=$(BUILD)/%.o)
$(LAYER_LIBS):
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# /play's page is a file of its own (server/handlers/play.html); its bytes become a C array.
$(BUILD)/gen/play_html.h: server/handlers/play.html
	@mkdir -p $(dir $@)
	xxd -i <$< >$@
$(BUILD)/server/handlers/play.o: $(BUILD)/gen/play_html.h
$(BUILD)/server/handlers/play.o: override CFLAGS += -I$(BUILD)/gen

# Each runner chains the suites of its folder, tests/<kind>/check_<name>.c exposing
# <name>_suite(); the list is written to $(BUILD)/<kind>/suites.h.
$(BUILD)/unit/suites.h $(BUILD)/integration/suites.h: $(BUILD)/%/suites.h: Makefile $(UNIT_SRC) $(INTEG_SRC)
	@mkdir -p $(dir $@)
	@{ for s in $(call suites_of,$*); do echo "SUITE($$s)"; done; } > $@.tmp && mv $@.tmp $@

$(BUILD)/unit/runner.o $(BUILD)/integration/runner.o: $(BUILD)/%/runner.o: tests/harness/runner.c $(BUILD)/%/suites.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(BUILD)/$* -c -o $@ $<

$(UNIT_BIN): $(BUILD)/unit/runner.o $(UNIT_SRC:%.c=$(BUILD)/%.o) $(HARNESS_SRC:%.c=$(BUILD)/%.o) $(LAYER_LIBS)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(INTEG_BIN): $(BUILD)/integration/runner.o $(INTEG_SRC:%.c=$(BUILD)/%.o) $(HARNESS_SRC:%.c=$(BUILD)/%.o) $(LAYER_LIBS)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

TEST_ENV = RATELAB_BIN=$(abspath $(BIN)) RATELAB_ROOT=$(CURDIR)

layering:
	@sh scripts/layering

sources:
	@sh scripts/sources $(LIB_SRC)

sources-list:
	@echo $(LIB_SRC)

deps:
	@sh scripts/install-deps

# `make check`: deps, then check-nodeps: the layering, the listed sources, then every test
# job side by side (tests/harness/jobs.sh): the pure suites, each integration suite as its
# own process (CK_RUN_SUITE), each tests/shell script and each lab-guide chapter.  A new
# tests/integration/check_X.c, tests/shell/X.sh or lab-guide/NN-X.md joins by existing.
# CHECK_JOBS=N jobs at once (default 4); CK_RUN_SUITE=name with check-integration runs one suite.
# A sanitized tree runs no lab-guide chapter and no README tour (CHECK_LABGUIDE=1 runs
# them): their shown figures are timings of the plain build, which ASan and TSan slow
# several times.
ifneq ($(SANITIZE),)
  CHAPTERS  := $(if $(CHECK_LABGUIDE),$(sort $(wildcard lab-guide/[0-9]*.md)))
else
  CHAPTERS  := $(sort $(wildcard lab-guide/[0-9]*.md))
endif
# readme_tour.sh compares the README's tour with a real run, as a chapter does: not in a
# sanitized tree either (unless CHECK_LABGUIDE=1).
DOC_TESTS   := tests/shell/labguide.sh $(if $(and $(SANITIZE),$(if $(CHECK_LABGUIDE),,1)),tests/shell/readme_tour.sh)
SHELL_TESTS := $(filter-out $(DOC_TESTS),$(sort $(wildcard tests/shell/*.sh)))
CHECK_LIST  := $(BUILD)/check-jobs
CHECK_ORDER := $(firstword $(wildcard $(BUILD)/check-times) tests/harness/job-times)

# Without a -j of the caller's, the build after deps uses every core.
check demo bench: deps
	@$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc)) $@-nodeps

check-nodeps: layering sources $(BIN) $(UNIT_BIN) $(INTEG_BIN)
	@{ printf 'unit\t%s\n' '$(abspath $(UNIT_BIN))'; \
	  for s in $(call suites_of,integration); do \
		printf 'integration/%s\tCK_RUN_SUITE=%s %s\n' $$s $$s '$(abspath $(INTEG_BIN))'; done; \
	  for t in $(SHELL_TESTS); do printf 'shell/%s\tsh %s\n' $$(basename $$t .sh) $$t; done; \
	  printf 'lab-guide/self-test\tsh tests/shell/labguide.sh --self-test\n'; \
	  for c in $(CHAPTERS); do printf '%s\tsh tests/shell/labguide.sh %s\n' $${c%.md} $$c; done; \
	} > $(CHECK_LIST)
	@$(TEST_ENV) CHECK_ORDER=$(CHECK_ORDER) CHECK_TIMES=$(BUILD)/check-times sh tests/harness/jobs.sh $(CHECK_LIST)

check-unit: $(UNIT_BIN)
	$(TEST_ENV) $(UNIT_BIN)

check-integration: $(BIN) $(INTEG_BIN)
	$(TEST_ENV) $(INTEG_BIN)

check-shell: $(BIN)
	@set -e; for t in $(sort $(wildcard tests/shell/*.sh)); do echo "== $$t"; $(TEST_ENV) sh $$t; done

bench-nodeps: $(BIN) $(BUILD)/bench-hello $(BUILD)/bench-floor $(BUILD)/limiter_bench $(BUILD)/bench-collide $(INTEG_BIN)
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
	$(MAKE) -f fuzz.mk FUZZ_SECONDS=$(or $(FUZZ_SECONDS),30) LIB_SRC="$(LIB_SRC)"

soak: $(BIN)
	RATELAB_BIN=$(abspath $(BIN)) sh bench/soak

# BUILD=dir make clean removes that tree; a plain one removes build/ (the sanitizer trees
# are under it) and ./ratelab.
clean:
	rm -rf $(BUILD) $(BIN)

help:
	@echo "targets: all deps check check-nodeps check-unit check-integration check-shell layering sources"
	@echo "         demo bench fuzz soak install uninstall man completion deb clean"
	@echo "options: SANITIZE=address,undefined|thread WERROR=1 PREFIX=/usr/local DESTDIR= V=1"
	@echo "         CHECK_JOBS=N CK_RUN_SUITE=name"

-include $(LIB_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(TEST_OBJ:.o=.d)

# The limiter microbenchmark: ns per decision (key table + decide), 1 and 2 threads.
# bench/run calls $(BUILD)/limiter_bench; `make limiter-bench` runs it alone.
.PHONY: limiter-bench
$(BUILD)/limiter_bench: $(BUILD)/bench/limiter_bench.o $(BUILD)/libserver.a $(BUILD)/libcommon.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

limiter-bench: $(BUILD)/limiter_bench
	$(BUILD)/limiter_bench --limiter all
-include $(BUILD)/bench/limiter_bench.d

# X-Key values that collide in the old, unkeyed key table: bench/run's hashflood section.
$(BUILD)/bench-collide: $(BUILD)/bench/collide.o $(BUILD)/libserver.a $(BUILD)/libcommon.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
-include $(BUILD)/bench/collide.d

# ---- Shipping: man pages, shell completion, install/uninstall, the .deb, the quiet demo ----
# man/*.1.scd (scdoc) -> $(BUILD)/man/*.1; the completion scripts are generated from the
# option tables by scripts/gen-completion.  `make` builds both when scdoc is installed.
.PHONY: man completion deb
SCDOC      ?= scdoc
MANDIR     ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
MAN_PAGES  := $(patsubst man/%.scd,$(BUILD)/man/%,$(sort $(wildcard man/*.1.scd)))
COMPLETIONS := $(BUILD)/completion/ratelab.bash $(BUILD)/completion/_ratelab
ifneq ($(shell command -v $(SCDOC) 2>/dev/null),)
all: man completion
endif

man: $(MAN_PAGES)
completion: $(COMPLETIONS)

$(BUILD)/man/%.1: man/%.1.scd
	@mkdir -p $(dir $@)
	$(SCDOC) < $< > $@.tmp && mv $@.tmp $@

$(BUILD)/completion/ratelab.bash: scripts/gen-completion $(BIN)
	@mkdir -p $(dir $@)
	sh scripts/gen-completion bash $(abspath $(BIN)) > $@.tmp && mv $@.tmp $@

$(BUILD)/completion/_ratelab: scripts/gen-completion $(BIN)
	@mkdir -p $(dir $@)
	sh scripts/gen-completion zsh $(abspath $(BIN)) > $@.tmp && mv $@.tmp $@

# install/uninstall honour PREFIX and DESTDIR; uninstall removes every file install
# wrote, then the directories below PREFIX that are left empty (with DESTDIR, the empty
# PREFIX path inside DESTDIR too), so a staged install leaves nothing behind.
INSTALL_DIRS := bin $(MANDIR:$(PREFIX)/%=%)/man1 $(BASHCOMPDIR:$(PREFIX)/%=%) $(ZSHCOMPDIR:$(PREFIX)/%=%)
install: $(BIN) man completion
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/ratelab
	install -m 0644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(BUILD)/completion/ratelab.bash $(DESTDIR)$(BASHCOMPDIR)/ratelab
	install -m 0644 $(BUILD)/completion/_ratelab $(DESTDIR)$(ZSHCOMPDIR)/_ratelab

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/ratelab $(DESTDIR)$(BASHCOMPDIR)/ratelab $(DESTDIR)$(ZSHCOMPDIR)/_ratelab
	rm -f $(patsubst man/%.scd,$(DESTDIR)$(MANDIR)/man1/%,$(wildcard man/*.1.scd))
	@for d in $(INSTALL_DIRS); do \
		while [ -n "$$d" ] && [ "$$d" != . ] && [ -d "$(DESTDIR)$(PREFIX)/$$d" ]; do \
			rmdir "$(DESTDIR)$(PREFIX)/$$d" 2>/dev/null || break; \
			d=$$(dirname "$$d"); \
		done; \
	done
	@if [ -n "$(DESTDIR)" ]; then p='$(PREFIX)'; \
		while [ "$$p" != / ] && [ "$$p" != . ] && rmdir "$(DESTDIR)$$p" 2>/dev/null; do p=$$(dirname "$$p"); done; \
	fi

# The Debian package: the install tree under /usr, Depends read by dpkg-shlibdeps.
DEB_VERSION := $(shell sed -n 's/^\#define RATELAB_VERSION "\(.*\)"$$/\1/p' common/version.h)
DEB_ARCH    := $(shell dpkg --print-architecture 2>/dev/null)
DEB         := $(BUILD)/ratelab_$(DEB_VERSION)_$(DEB_ARCH).deb
deb: $(DEB)
	@echo "package: $(DEB)"
$(DEB): $(BIN) $(MAN_PAGES) $(COMPLETIONS) scripts/mkdeb README.md
	rm -rf $(BUILD)/deb-root
	$(MAKE) --no-print-directory -s install DESTDIR=$(abspath $(BUILD)/deb-root) PREFIX=/usr
	sh scripts/mkdeb $(abspath $(BUILD)/deb-root) $@
	rm -rf $(BUILD)/deb-root

# make demo (after make deps): the build is one line ("built ratelab in N s"), so the demo
# is the first thing on screen; V=1 shows the compiler lines.  The quiet build's lines are
# kept in $(BUILD)/demo-build.log and shown when it fails.
demo-nodeps:
ifeq ($(V),1)
	$(MAKE) --no-print-directory $(BIN)
else
	@mkdir -p $(BUILD); start=$$(date +%s); \
	if $(MAKE) --no-print-directory $(BIN) > $(BUILD)/demo-build.log 2>&1; then \
		echo "built ratelab in $$(( $$(date +%s) - start )) s (V=1 shows the compiler lines)"; \
	else \
		cat $(BUILD)/demo-build.log; exit 1; \
	fi
endif
	@RATELAB_BIN=$(abspath $(BIN)) sh scripts/demo
