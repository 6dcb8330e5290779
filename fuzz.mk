# libFuzzer targets for every parser that takes user input.
#
#   make fuzz                    each target for 30 s (what CI runs)
#   make fuzz FUZZ_SECONDS=600   longer
#   make -f fuzz.mk build        build only
#   make -f fuzz.mk FUZZ_TARGETS="fuzz_parse fuzz_httpdate"   a subset
#
# Each tests/fuzz/fuzz_<name>.c is one target; its seed corpus is
# tests/fuzz/fuzz_<name>/.  The project's sources are compiled with clang into
# build/fuzz/ (never mixed with the gcc build) with ASan + UBSan + fuzzer
# coverage.  Runs grow a working corpus under build/fuzz/corpus/<target>/ so the
# checked-in seeds stay small; crashes land in build/fuzz/crashes/<target>/.
# It prints executions and crashes per target and fails when any target crashed.

FUZZ_SECONDS ?= 30
FUZZ_CC      ?= clang
FUZZ_BUILD   := build/fuzz
# The libraries the project links, as the main Makefile lists them (minus check).
PKGS         := $(filter-out check,$(shell sed -n 's/^PKGS *:= *//p' Makefile))

# clang and the libFuzzer runtime come from `scripts/install-deps clang libclang-rt-14-dev`
# (.ci/run runs it up front); this only says so when a trivial fuzzer does not link.
FUZZ_PROBE := $(shell printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}\n' \
	| $(FUZZ_CC) -x c -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1 && echo ok)
ifneq ($(FUZZ_PROBE),ok)
  $(error $(FUZZ_CC) cannot build a libFuzzer target: run scripts/install-deps clang libclang-rt-14-dev)
endif

SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FCFLAGS  := -std=c11 -O1 -g -D_GNU_SOURCE -I. -w $(SAN) -fsanitize=fuzzer-no-link \
            $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
FLDLIBS  := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm

# The sources the Makefile lists (make sources checks that it lists them all).
ifeq ($(origin LIB_SRC),undefined)
  LIB_SRC := $(shell $(MAKE) -s --no-print-directory -f Makefile sources-list)
endif
LIB_OBJ  := $(LIB_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_TARGETS ?= $(patsubst tests/fuzz/%.c,%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/%)

.PHONY: run build
.DEFAULT_GOAL := run

build: $(FUZZ_BINS)

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FCFLAGS) -MMD -MP -c -o $@ $<

# /play's page as a C array, as in the Makefile
$(FUZZ_BUILD)/gen/play_html.h: server/handlers/play.html
	@mkdir -p $(dir $@)
	xxd -i <$< >$@
$(FUZZ_BUILD)/obj/server/handlers/play.o: $(FUZZ_BUILD)/gen/play_html.h
$(FUZZ_BUILD)/obj/server/handlers/play.o: FCFLAGS += -I$(FUZZ_BUILD)/gen

$(FUZZ_BUILD)/libratelab.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_BUILD)/libratelab.a
	$(FUZZ_CC) $(FCFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_BUILD)/libratelab.a $(FLDLIBS)

# One target after the other (the machine has 2 cores shared with the build);
# -print_final_stats gives the execution count, artifacts count the crashes.
run: build
	@fail=0; for t in $(FUZZ_TARGETS); do \
		c=$(FUZZ_BUILD)/corpus/$$t; a=$(FUZZ_BUILD)/crashes/$$t; log=$(FUZZ_BUILD)/$$t.log; \
		rm -rf $$a; mkdir -p $$c $$a; \
		UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
		$(FUZZ_BUILD)/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=1024 \
			-max_len=8192 -print_final_stats=1 -artifact_prefix=$$a/ \
			$$c tests/fuzz/$$t >$$log 2>&1; rc=$$?; \
		execs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$log | tail -n 1); \
		crashes=$$(ls $$a | wc -l); \
		printf '%-20s %12s execs in %ss  corpus %s  crashes %s\n' $$t "$${execs:-?}" \
			$(FUZZ_SECONDS) "$$(ls $$c | wc -l)" $$crashes; \
		if [ $$rc -ne 0 ] || [ $$crashes -ne 0 ]; then \
			fail=1; echo "  $$t FAILED (exit $$rc); see $$log and $$a/"; tail -n 30 $$log; fi; \
	done; exit $$fail

-include $(LIB_OBJ:.o=.d)
