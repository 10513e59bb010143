// Package buildinfo says which build a libjprof command is, for its
// --version: the version and commit the Makefile sets with -ldflags -X,
// or else what the Go toolchain recorded (module version, VCS revision
// when it stamps one), so that a plain go build still answers.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the Makefile:
//
//	-X github.com/libjprof/libjprof/internal/buildinfo.Version=$(git describe --tags --always --dirty)
//	-X github.com/libjprof/libjprof/internal/buildinfo.Commit=$(git rev-parse HEAD)
var (
	Version string
	Commit  string
)

// String is the --version line of the command prog:
// "jprof v0.1-12-gabc1234 (commit abc1234..., go1.26.8)".
func String(prog string) string {
	v, c := Version, Commit
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version // "(devel)" for a build in the source tree
		}
		if c == "" {
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					c = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if c != "" && modified {
				c += "-dirty"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if c == "" {
		c = "unknown (build with make for it)"
	}
	return fmt.Sprintf("%s %s (commit %s, %s)\n", prog, v, c, runtime.Version())
}
