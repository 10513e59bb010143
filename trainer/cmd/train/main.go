// Command train makes a calibration table with the Java trainer:
//
//	go run ./trainer/cmd/train -o calibration/tables/openjdk-17-amd64-PTT_TIME-bpf.cal
//
// It runs java/src/Trainer.java under the agent several times, merges the
// minima, measures the environmental overhead without the agent, and
// writes the table (standard output without -o). Paths default to the
// build directory of the repository, for `make train` from its top.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/libjprof/libjprof/calibration"
	"github.com/libjprof/libjprof/internal/atomicfile"
	"github.com/libjprof/libjprof/trainer"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg trainer.Config
	out := fs.String("o", "", "write the table to this file (default: standard output)")
	fs.StringVar(&cfg.Java, "java", "java", "java executable")
	fs.StringVar(&cfg.Agent, "agent", "build/libjprof.so", "agent library")
	fs.StringVar(&cfg.ClassPath, "cp", "build/java", "directory of the trainer's classes")
	fs.StringVar(&cfg.LibPath, "native", "build/native", "directory of libjptrainer.so")
	fs.IntVar(&cfg.Runs, "runs", 3, "runs under the agent")
	fs.IntVar(&cfg.Reps, "reps", 0, "repetitions of each pattern (default: the trainer's)")
	fs.StringVar(&cfg.Metric, "metric", "PTT_TIME", "metric to train")
	fs.StringVar(&cfg.Backend, "backend", "", "force the PTT backend (bpf, perf, clock)")
	fs.StringVar(&cfg.AgentOptions, "agent-options", "", "extra agent options")
	fs.BoolVar(&cfg.SkipEnv, "no-env", false, "do not measure the environmental overhead")
	fs.StringVar(&cfg.WorkDir, "keep", "", "keep each run's files in this directory")
	four := fs.Bool("four", false, "also print the 4-element view (seed 000 Table 1) to standard error")
	quiet := fs.Bool("q", false, "no progress output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if !*quiet {
		cfg.Log = stderr
	}
	for _, p := range []*string{&cfg.Agent, &cfg.ClassPath, &cfg.LibPath} {
		if *p != "" {
			abs, err := filepath.Abs(*p)
			if err != nil {
				return err
			}
			*p = abs
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.LibPath, "libjptrainer.so")); err != nil && !*quiet {
		fmt.Fprintf(stderr, "train: warning: no libjptrainer.so in %s: native sequences will be missing\n", cfg.LibPath)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	tab, err := trainer.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *four {
		if err := tab.WriteFourElement(stderr); err != nil {
			return err
		}
	}
	if *out == "" {
		return tab.Write(stdout)
	}
	return writeFile(*out, tab)
}

// writeFile writes the table so that the file is either complete or
// absent.
func writeFile(path string, tab *calibration.Table) error {
	return atomicfile.Write(path, tab.Write)
}
