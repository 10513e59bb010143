package casegen

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite java/src/TrainerCases.java")

func javaFile(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "java", "src", "TrainerCases.java")
}

// The committed Java file is what the generator writes.
func TestGenerated(t *testing.T) {
	path := javaFile(t)
	got := Generate()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "java/src/TrainerCases.java is stale: go test ./trainer/internal/casegen -update")
}

func TestCallables(t *testing.T) {
	cs := Callables()
	require.Len(t, cs, 8+4*48)
	names := map[string]bool{}
	for i, c := range cs {
		assert.Equal(t, i, c.Index)
		assert.False(t, names[c.Name], "duplicate %s", c.Name)
		names[c.Name] = true
		if c.Form != 0 {
			assert.True(t, isNative(c.Type), c.Name)
			assert.Less(t, c.X, 8, "%s calls a leaf", c.Name)
			assert.Less(t, c.Y, 8, "%s calls a leaf", c.Name)
		}
	}
	tests := []struct {
		name           string
		throws, native bool
		form           int
	}{
		{"i.ret", false, false, 0},
		{"N.thr", true, true, 0},
		{"i.call(I)", false, false, 0},
		{"I.prop(i)", true, false, 0},
		{"i.callthrow(n)", true, true, 0},
		{"I.catch(I)", false, false, 0},
		{"i.seqx(I,N)", false, true, 0},
		{"n.call(i)", false, true, formCall},
		{"N.prop(I)", true, true, formCall},
		{"n.callthrow(N)", true, true, formCallThrow},
		{"N.catch(n)", false, true, formCatch},
		{"n.seq(i,I)", false, true, formSeq},
	}
	byName := map[string]Callable{}
	for _, c := range cs {
		byName[c.Name] = c
	}
	for _, tc := range tests {
		c, ok := byName[tc.name]
		require.True(t, ok, tc.name)
		assert.Equal(t, tc.throws, c.Throws, tc.name)
		assert.Equal(t, tc.native, c.Native, tc.name)
		assert.Equal(t, tc.form, c.Form, tc.name)
	}
	// Native shapes call the right leaves: prop calls the throwing leaf.
	assert.Equal(t, leaf('I', true), byName["N.prop(I)"].X)
	assert.Equal(t, leaf('N', false), byName["n.seq(N,i)"].X)
	assert.Equal(t, leaf('i', false), byName["n.seq(N,i)"].Y)
}
