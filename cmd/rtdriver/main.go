// Command rtdriver drives a running libjprof agent over its control socket,
// like JProf's rtdriver:
//
//	rtdriver -c start          # begin collecting
//	rtdriver -c flush 30       # in 30 s, write the next log-rt.N_<pid>
//	rtdriver -pid 4242 -c end  # stop + flush + reset the agent of JVM 4242
//	rtdriver -b -c end         # the same in every JVM of yours
//	rtdriver -l                # list the JVMs you may control
//	rtdriver                   # interactive, with your only JVM
//
// Run rtdriver -h for the flags. The protocol is described in package
// github.com/libjprof/libjprof/agent/control.
package main

import (
	"context"
	"os"
)

func main() {
	// SIGINT keeps its default action: nothing here needs cleaning up, and
	// an interactive read of stdin could not be interrupted otherwise.
	os.Exit(run(context.Background(), os.Args[1:], env{
		stdin:  os.Stdin,
		stdout: os.Stdout,
		stderr: os.Stderr,
		getenv: os.Getenv,
		prompt: isTerminal(os.Stdin),
		uid:    os.Geteuid(),
	}))
}

// isTerminal reports whether f looks like a terminal, where a prompt helps;
// with piped input a prompt would only clutter the output.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
