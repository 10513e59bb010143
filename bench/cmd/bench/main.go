// Command bench runs libjprof's benchmark suite and writes BENCHMARKS.md.
//
//	make bench                      # builds everything, then runs this
//	go run ./bench/cmd/bench -rounds 3 -ops 2000 -out /tmp/B.md
//
// It needs `make all` to have been run (the agent and the Java classes),
// gcc for the reference agents (built here if -agents lacks them), and
// root or CAP_BPF+CAP_PERFMON for the eBPF PTT backend (skipped, with the
// reason in the report, without them).
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/libjprof/libjprof/bench"
	"github.com/libjprof/libjprof/internal/atomicfile"
)

func main() {
	var o bench.Options
	var out, partsFlag, mergeInto, mergeFrom string
	flag.StringVar(&o.Root, "root", "", "repository top (default: the directory holding go.mod above the current one)")
	flag.StringVar(&o.Agents, "agents", "", "directory of empty.so and naive.so (default <root>/build/bench; built if missing)")
	flag.StringVar(&o.Java, "java", "java", "java binary")
	flag.StringVar(&o.Go, "go", "go", "go binary, for the reports benchmark")
	flag.StringVar(&out, "out", "", "report file (default <root>/BENCHMARKS.md; - for stdout)")
	flag.IntVar(&o.Ops, "ops", 1500, "BenchWorkload ops in the measured phase (191 calls each)")
	flag.IntVar(&o.Reps, "reps", 5, "repetitions of the measured phase per JVM (the fastest counts)")
	flag.IntVar(&o.WarmOps, "warm", 0, "BenchWorkload warm-up ops (default ops/4)")
	flag.IntVar(&o.Rounds, "rounds", 11, "interleaved rounds of the workload session")
	flag.IntVar(&o.JavacRounds, "javac-rounds", 2, "rounds of the javac runs (0: skip)")
	flag.IntVar(&o.RealRounds, "real-rounds", 5, "rounds of the real programs, H2 and groovy (-1: skip)")
	flag.IntVar(&o.SampleJFRRounds, "jfrsample-rounds", 7, "rounds of SAMPLE against JFR's CPU-time sampler (JDK 25)")
	flag.IntVar(&o.RepeatRuns, "repeat-runs", 5, "runs of hellop and javac the repeatability part compares")
	flag.IntVar(&o.StressRuns, "stress-runs", 100, "thread-end stress runs per configuration")
	flag.IntVar(&o.StressThreads, "stress-threads", 6400, "short threads per stress run")
	flag.IntVar(&o.FallbackJVMs, "fallback-jvms", 5, "FallbackPairs runs of each fallback backend")
	flag.IntVar(&o.FallbackRounds, "fallback-rounds", 20, "FallbackPairs rounds of work per thread")
	flag.IntVar(&o.ReadCostReads, "reads", 2_000_000, "PTT reads per read-cost measurement")
	flag.IntVar(&o.ReadCostReps, "read-reps", 5, "read-cost measurements per backend")
	flag.BoolVar(&o.GoBench, "gobench", true, "also run the reports package's BenchmarkLogGenBuild")
	flag.Uint64Var(&o.Seed, "seed", 0, "shuffle seed (default: from the clock)")
	flag.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "time limit per JVM run")
	flag.StringVar(&mergeInto, "merge-into", "", "with -parts: merge the sections run into this full report (e.g. BENCHMARKS.md) instead of writing a report of their own")
	flag.StringVar(&mergeFrom, "merge-from", "", "with -merge-into: merge this partial report (written by an earlier -parts run) instead of running anything")
	flag.StringVar(&partsFlag, "parts", "", "comma-separated sections to run: "+strings.Join(bench.PartNames(), ",")+" (default all)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if mergeFrom != "" {
		if err := mergeFile(mergeInto, mergeFrom, partsFlag); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if mergeInto != "" {
		if partsFlag == "" {
			fmt.Fprintln(os.Stderr, "bench: -merge-into needs -parts")
			os.Exit(2)
		}
		out = mergeInto + ".part"
	}
	runErr := run(ctx, o, out, partsFlag)
	if runErr != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", runErr)
	}
	if _, err := os.Stat(out); mergeInto != "" && err == nil {
		// A failed part's section says so: merged all the same.
		err := mergeFile(mergeInto, out, partsFlag)
		os.Remove(out)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(1)
		}
	}
	if runErr != nil {
		os.Exit(1)
	}
}

// mergeFile merges the partial report from into the full report into.
func mergeFile(into, from, parts string) error {
	if into == "" || parts == "" {
		return errors.New("-merge-from needs -merge-into and the -parts the partial report ran")
	}
	base, err := os.ReadFile(into)
	if err != nil {
		return err
	}
	part, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	merged, err := mergeReports(base, part, parts)
	if err != nil {
		return fmt.Errorf("merging %s into %s: %w", from, into, err)
	}
	if err := atomicfile.Write(into, func(w io.Writer) error {
		_, err := w.Write(merged)
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: merged %s into %s\n", from, into)
	return nil
}

func run(ctx context.Context, o bench.Options, out, partsFlag string) error {
	if o.Root == "" {
		root, err := findRoot()
		if err != nil {
			return err
		}
		o.Root = root
	}
	if o.Agents == "" {
		o.Agents = filepath.Join(o.Root, "build", "bench")
	}
	if err := ensureAgents(ctx, o.Root, o.Agents); err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(o.Root, "BENCHMARKS.md")
	}
	parts, err := bench.SelectParts(partsFlag)
	if err != nil {
		return err
	}
	s, runErr := bench.Run(ctx, o, parts)
	if s == nil {
		return runErr
	}
	var buf bytes.Buffer
	if err := s.WriteMarkdown(&buf); err != nil {
		return errors.Join(runErr, err)
	}
	if out == "-" {
		_, err := os.Stdout.Write(buf.Bytes())
		return errors.Join(runErr, err)
	}
	// Written whole and renamed: an interrupted run leaves the previous
	// report in place.
	if err := atomicfile.Write(out, func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	}); err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s\n", out)
	return runErr
}

func ensureAgents(ctx context.Context, root, dir string) error {
	for _, a := range bench.ReferenceAgents {
		if _, err := os.Stat(filepath.Join(dir, a+".so")); err != nil {
			return bench.BuildAgents(ctx, root, dir)
		}
	}
	return nil
}

// findRoot walks up from the current directory to the one with go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the current directory: pass -root")
		}
		dir = parent
	}
}
