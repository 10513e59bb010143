package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFilterWarnings(t *testing.T) {
	for _, c := range []struct {
		include, exclude string
		want             []string
	}{
		{"", "", nil},
		{"com.example", "", nil},
		{"java", "", nil}, // java.sql, java.desktop...: not all java.base
		{"java.util", "", []string{"INCLUDE prefix java.util selects nothing: it is in java.base (java.util)"}},
		{"java/util/concurrent+com.x", "", []string{"INCLUDE prefix java.util.concurrent selects nothing: it is in java.base (java.util)"}},
		{"Work", "Work", []string{"INCLUDE prefix Work selects nothing: EXCLUDE prefix Work takes all of it"}},
		{"com.x.y", "com.x", []string{"INCLUDE prefix com.x.y selects nothing: EXCLUDE prefix com.x takes all of it"}},
		{"com.x", "com.x.y", nil},
	} {
		got := filterWarnings(c.include, c.exclude)
		assert.Len(t, got, len(c.want), "%q %q: %q", c.include, c.exclude, got)
		for i := range min(len(got), len(c.want)) {
			assert.Contains(t, got[i], c.want[i])
		}
	}
}
