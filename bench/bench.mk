# bench.mk: the benchmark suite. The main Makefile includes it
# (include bench/bench.mk) and defines GO, BUILD, JAVA_HOME and CGO_CFLAGS.
#
#   make bench                           # all rounds, writes BENCHMARKS.md (~10 min on 2 cores)
#   make bench BENCH_FLAGS='-rounds 3 -ops 2000 -javac-rounds 1 -out /tmp/B.md'
#   make bench BENCH_FLAGS='-parts threads -merge-into BENCHMARKS.md'   # rerun some sections only
#
# The harness interleaves the configurations (see bench/doc.go); the eBPF
# PTT backend needs root or CAP_BPF+CAP_PERFMON, and is skipped with the
# reason in the report without them.

BENCH_AGENTS := $(BUILD)/bench/empty.so $(BUILD)/bench/naive.so $(BUILD)/bench/sigcost
BENCH_FLAGS  ?=

.PHONY: bench bench-agents bench-harness

# bench-agents: the reference agents the benchmarks compare with.
bench-agents: $(BENCH_AGENTS)

# The reference agents: plain C against the JDK's jvmti.h, nothing else.
$(BUILD)/bench/%.so: bench/agents/%.c bench/agents/refagent.h
	@mkdir -p $(dir $@)
	gcc -O2 -Wall -Wextra -shared -fPIC $(CGO_CFLAGS) -o $@ $<

# sigcost: one perf-timer signal's cost on this machine, without the agent.
$(BUILD)/bench/sigcost: bench/agents/sigcost.c
	@mkdir -p $(dir $@)
	gcc -O2 -Wall -Wextra -o $@ $<

# bench-harness: build/bin/bench, the benchmark harness.
bench-harness: $(BENCH_AGENTS)
	@mkdir -p $(BUILD)/bin
	$(GO) build -o $(BUILD)/bin/bench ./bench/cmd/bench

# bench: run the benchmark suite and write BENCHMARKS.md (about 10 min).
bench: all bench-agents bench-harness
	$(BUILD)/bin/bench -root $(CURDIR) -agents $(BUILD)/bench -go $(GO) -out BENCHMARKS.md $(BENCH_FLAGS)
