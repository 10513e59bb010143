package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
)

func TestFilterWarnings(t *testing.T) {
	for _, c := range []struct {
		include, exclude string
		want             []string
	}{
		{"", "", nil},
		{"com.example", "", nil},
		{"java.util", "", nil}, // the transformer's to tell (java.util.logging is not java.base)
		{"Work", "Work", []string{"INCLUDE prefix Work selects nothing: EXCLUDE prefix Work takes all of it"}},
		{"com/x/y+org.z", "com.x*", []string{"INCLUDE prefix com.x.y selects nothing: EXCLUDE prefix com.x takes all of it"}},
		{"com.x", "com.x.y", nil},
	} {
		got := filterWarnings(c.include, c.exclude)
		assert.Equal(t, c.want, got, "%q %q", c.include, c.exclude)
	}
}

// The transformer warns of an INCLUDE prefix in java.base, and not of one
// that reaches another module's packages too.
func TestIncludeJavaBase(t *testing.T) {
	for inc, warned := range map[string]bool{"java.util.concurrent": true, "java.util.logging": false, "java.util": false} {
		r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "START,NORTDRIVER,INCLUDE=" + inc})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		want := "libjprof: warning: INCLUDE prefix " + inc + " selects nothing: its classes are in java.base"
		assert.Equal(t, warned, strings.Contains(r.Stderr, want), "%s: %s", inc, r.Stderr)
	}
}
