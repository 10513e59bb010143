package pttbpf

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadOrSkip skips only when the kernel refuses for lack of privilege.
func loadOrSkip(t *testing.T, opts Options) *Objects {
	t.Helper()
	o, err := Load(opts)
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("cannot load eBPF here (needs CAP_BPF+CAP_PERFMON): %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, o.Close()) })
	return o
}

func TestLoad(t *testing.T) {
	for _, tc := range []struct{ mode, want string }{
		{"", "tp_btf"},
		{"tp_btf", "tp_btf"},
		{"raw_tp", "raw_tp"},
	} {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			o := loadOrSkip(t, Options{Slots: 64, Mode: tc.mode})
			assert.Equal(t, tc.want, o.Mode)
			assert.Equal(t, 64, o.NSlots)
			assert.Contains(t, o.Points, "softirq")
			assert.EqualValues(t, 65, o.Slots.MaxEntries())
			assert.EqualValues(t, 128, o.Tids.MaxEntries(), "room for a pending key beside each slot's tid")
			assert.True(t, o.Healer, "sched_exit_tp is on this kernel (6.18)")
			assert.True(t, o.RenameTrigger, "task_rename is on this kernel")
			st, err := o.Stats()
			require.NoError(t, err)
			t.Logf("mode %s points %v missing %v healer %v stats %+v", o.Mode, o.Points, o.Missing, o.Healer, st)
		})
	}
}

func TestLoadRejectsOptions(t *testing.T) {
	for _, opts := range []Options{{Slots: -1}, {Slots: maxSlots + 1}, {Mode: "kprobe"}} {
		_, err := Load(opts)
		assert.Error(t, err, "%+v", opts)
	}
}
