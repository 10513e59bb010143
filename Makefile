# libjprof build. `make demo` and `make test` do all the set-up a fresh
# machine needs (see `make deps`).

GO        ?= go
BUILD     := build
# JAVA_HOME picks the JDK (17 or later; default: the javac on PATH): its
# jni.h/jvmti.h build the agent, its javac the Java workloads (for Java 17,
# so that they run on every JDK the tests find), its java the demo and
# make train. The tests run on JAVA_HOME's java, and their key JVM tests
# on every JDK in /usr/lib/jvm too.
JAVA_HOME ?= $(shell dirname $$(dirname $$(readlink -f $$(command -v javac 2>/dev/null || echo /usr/lib/jvm/default-java/bin/javac))))
export JAVA_HOME
JAVAC     ?= $(JAVA_HOME)/bin/javac
JAVA      ?= $(JAVA_HOME)/bin/java
# Go's build cache does not see a C header outside a package's own
# directory (engine and jvmti include ptt/ptt.h): the headers' hash in the
# flags, which the cache does see, rebuilds what includes them.
C_HEADERS_HASH := $(shell cat ptt/*.h engine/*.h jvmti/*.h 2>/dev/null | sha1sum | cut -c1-12)
export CGO_CFLAGS := -O2 -I$(JAVA_HOME)/include -I$(JAVA_HOME)/include/linux -DJP_HEADERS_$(C_HEADERS_HASH)
# Go's asynchronous preemption signals (SIGURG) must never reach Java
# threads: turn it off in the library's default GODEBUG.
GOLDFLAGS := -X=runtime.godebugDefault=asyncpreemptoff=1

# The build's version and commit, for the commands' --version.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION_LDFLAGS := -X github.com/libjprof/libjprof/internal/buildinfo.Version=$(VERSION) \
                   -X github.com/libjprof/libjprof/internal/buildinfo.Commit=$(COMMIT)
# The version the binaries were last linked with: rewritten only when it
# changes, so that a commit (or an edit that makes the tree dirty) links
# them again and the state line never names an older version.
VERSION_STAMP := $(BUILD)/.version
$(shell mkdir -p $(BUILD) && v='$(VERSION) $(COMMIT)'; [ "$$(cat $(VERSION_STAMP) 2>/dev/null)" = "$$v" ] || echo "$$v" > $(VERSION_STAMP))

GO_SRC    := $(shell find agent engine jvmti ptt calibration reports trainer cmd internal -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.o' -o -name '*.cal' 2>/dev/null) go.mod go.sum
JAVA_SRC  := $(wildcard java/src/*.java)
# The BCI source's Java half (option BCI), compiled against Debian's ASM.
ASM_JARS  := /usr/share/java/asm.jar:/usr/share/java/asm-commons.jar
BCI_SRC   := $(wildcard java/agent/libjprof/bci/*.java)
# Workloads that generate classes with ASM (kept out of java/src, which
# the javac benchmark compiles without ASM).
ASM_JAVA_SRC := $(wildcard java/asmsrc/*.java)
# Workloads of many classes (ChainWork's 320), kept out of java/src so
# that the javac benchmark's input stays the workloads' usual code.
BULK_JAVA_SRC := $(wildcard java/bulk/*.java)

.PHONY: all help deps agent java cmds demo test train clean

# all: the agent, the Java workloads and the commands (the default).
all: agent java cmds

# help: this list of the targets, each with the first sentence of the
# comment above it.
help:
	@awk '/^#/ { c = c " " substr($$0, 3); next } /^[A-Za-z_][A-Za-z0-9_]* *[?:+]?=/ { next } \
	  /^[a-z][a-z-]*:([^=]|$$)/ { t = substr($$0, 1, index($$0, ":") - 1); sub("^ *" t ":? *", "", c); \
	    if (match(c, /\. /)) c = substr(c, 1, RSTART - 1); sub("\\.$$", "", c); printf "  make %-14s %s\n", t, c } \
	  { c = "" }' $(MAKEFILE_LIST)

# deps installs what a fresh Debian machine lacks: a JDK 17, gcc, ASM
# (libasm-java, for BCI), chromium for the flame graph's headless-browser
# test, and the real programs of the tests and the benchmark: H2
# (libh2-java) and groovy (as root).
deps:
	@missing=""; \
	command -v $(JAVAC) >/dev/null 2>&1 || missing="$$missing openjdk-17-jdk-headless"; \
	command -v gcc >/dev/null 2>&1 || missing="$$missing gcc"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	[ -r /usr/share/java/asm-commons.jar ] || missing="$$missing libasm-java"; \
	[ -r /usr/share/java/h2.jar ] || missing="$$missing libh2-java"; \
	[ -r /usr/share/java/groovy-all.jar ] || missing="$$missing groovy"; \
	if [ -n "$$missing" ]; then echo "installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi

# agent: build/libjprof.so, for java -agentpath, and build/jprof-bci.jar
# beside it (the BCI source's transformer).
agent: $(BUILD)/libjprof.so $(BUILD)/jprof-bci.jar

# ASM goes inside, renamed to libjprof.bci.asm (java/agent/shade/Shade.java),
# so that it never shadows the ASM of a profiled program.
$(BUILD)/jprof-bci.jar: $(BCI_SRC) java/agent/shade/Shade.java
	@rm -rf $(BUILD)/bci && mkdir -p $(BUILD)/bci/classes $(BUILD)/bci/shade
	$(JAVAC) -d $(BUILD)/bci/classes -cp $(ASM_JARS) --release 11 -XDstringConcat=inline $(BCI_SRC)
	$(JAVAC) -d $(BUILD)/bci/shade -cp $(ASM_JARS) java/agent/shade/Shade.java
	$(JAVA) -cp $(BUILD)/bci/shade:$(ASM_JARS) Shade $@.tmp $(BUILD)/bci/classes $(subst :, ,$(ASM_JARS))
	@mv $@.tmp $@

$(BUILD)/libjprof.so: $(GO_SRC) $(VERSION_STAMP)
	@mkdir -p $(BUILD)
	$(GO) build -buildmode=c-shared -ldflags '$(GOLDFLAGS) $(VERSION_LDFLAGS)' -o $@ ./agent

# java: the Java workloads and their native libraries.
java: $(BUILD)/java/.stamp $(BUILD)/real/.stamp $(BUILD)/native/libjpnative.so $(BUILD)/native/libjptrainer.so

# The real programs' drivers (java/real: H2Work runs on Debian's H2 through
# JDBC, no compile-time dependency; collections.groovy runs as it is).
$(BUILD)/real/.stamp: $(wildcard java/real/*.java)
	@mkdir -p $(BUILD)/real
	$(JAVAC) --release 17 -d $(BUILD)/real $^
	@touch $@

$(BUILD)/java/.stamp: $(JAVA_SRC) $(ASM_JAVA_SRC) $(BULK_JAVA_SRC)
	@mkdir -p $(BUILD)/java
	$(JAVAC) --release 17 -d $(BUILD)/java $(JAVA_SRC) $(BULK_JAVA_SRC)
	$(JAVAC) --release 17 -d $(BUILD)/java -cp $(ASM_JARS) $(ASM_JAVA_SRC)
	@touch $@

$(BUILD)/native/libjpnative.so: java/native/jpnative.c
	@mkdir -p $(BUILD)/native
	gcc -O2 -shared -fPIC $(CGO_CFLAGS) -o $@ $<

# The trainer's native methods and its attached native thread.
$(BUILD)/native/libjptrainer.so: java/native/trainer.c
	@mkdir -p $(BUILD)/native
	gcc -O2 -shared -fPIC $(CGO_CFLAGS) -o $@ $< -lpthread

# cmds: jprof and rtdriver in build/bin.
cmds: $(GO_SRC) $(VERSION_STAMP)
	@mkdir -p $(BUILD)/bin
	$(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $(BUILD)/bin/ ./cmd/...

# demo: profile the hellop example of the PI paper and show its log-rt.
demo: deps all
	@rm -rf $(BUILD)/demo && mkdir -p $(BUILD)/demo
	$(JAVA) -agentpath:$(CURDIR)/$(BUILD)/libjprof.so=RTARCF,START,LOGPATH=$(BUILD)/demo -cp $(BUILD)/java hellop
	@f=$$(ls $(BUILD)/demo/log-rt.1_*); echo "--- $$f (header, then the thread root and the hellop subtree)"; \
	  sed -n '1,/^ *LV /p' $$f; grep -m1 '^   0 .*_main$$' $$f; grep -E '^ +[0-9]+ .* [iIjJ]:hellop\.' $$f
	@echo "--- the whole file: $$(ls $(BUILD)/demo/log-rt.1_*); reports: build/bin/jprof report xprof $$(ls $(BUILD)/demo/log-rt.1_*)"

# train: run the Java trainer under the agent (3 runs), merge the minima,
# measure the environmental overhead without the agent, and write the
# calibration table for this JVM, metric and PTT backend into
# calibration/tables, where the next build embeds it as the default.
# PTT=clock|perf|bpf picks the backend (default: the best available);
# SOURCE=bci trains the bytecode-instrumentation source (its own table,
# without the interpreter's environmental overhead, which it does not have,
# nor an excess: see trainer/run.go);
# READS=2 the agent's path with two PTT reads per event (LATEREAD; its
# tables end in -2reads.cal); CLOCK=vdso reads the vDSO clock each time
# (NOTSC; tables end in -vdso.cal) where the agent would scale the TSC.
TRAIN_PTT ?= $(or $(PTT),bpf)
comma := ,
empty :=
space := $(empty) $(empty)
TRAIN_BCI := $(filter bci,$(SOURCE))
# (ALLMETHODS: the trainer's known-cost methods are as small as trivial ones.)
TRAIN_AGENT_OPTS := $(subst $(space),$(comma),$(strip $(if $(TRAIN_BCI),BCI ALLMETHODS) $(if $(filter 2,$(READS)),LATEREAD) $(if $(filter vdso,$(CLOCK)),NOTSC)))
TRAIN_SOURCE_OPTS := $(if $(TRAIN_AGENT_OPTS),-agent-options $(TRAIN_AGENT_OPTS)) $(if $(TRAIN_BCI),-no-env)
TRAIN_SUFFIX := $(if $(TRAIN_BCI),-bci)$(if $(filter 2,$(READS)),-2reads)$(if $(filter vdso,$(CLOCK)),-vdso)
train: deps all
	$(GO) run ./trainer/cmd/train -java $(JAVA) -backend $(TRAIN_PTT) $(TRAIN_SOURCE_OPTS) \
	  -o calibration/tables/openjdk-$$($(JAVA) -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')-$$(uname -m)-PTT_TIME-$(TRAIN_PTT)$(TRAIN_SUFFIX).cal

# test: go vet and every package's tests (the JVM tests of one package run
# one after another; the time limit is far above a quiet machine's few
# minutes, for a loaded one).
test: deps all
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 45m ./...

# clean: remove build/.
clean:
	rm -rf $(BUILD)

# bench: the benchmark suite, writes BENCHMARKS.md (see bench/bench.mk).
include bench/bench.mk
