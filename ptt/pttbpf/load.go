// Package pttbpf loads and attaches the eBPF programs of libjprof's PTT
// eBPF backend (ptt.bpf.c) and owns their maps. It is pure Go, so both
// the agent (package ptt) and a privileged helper that hands the map FDs
// to unprivileged JVMs can use it.
package pttbpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
)

// IRQPoints are the asynchronous interrupt tracepoints hooked, as stems
// of <stem>_entry/<stem>_exit pairs, as in the C IRQ_POINTS list.
var IRQPoints = []string{
	"irq_handler", "softirq", "local_timer", "call_function",
	"call_function_single", "reschedule", "irq_work", "x86_platform_ipi",
}

// DefaultSlots is the number of thread slots when Options.Slots is 0:
// the threads of a large server, at 64 bytes of work area and two
// preallocated tid entries a slot.
const DefaultSlots = 32768

// Must match ptt_slot.h.
const (
	slotSize = 64
	hdrMagic = 0x31545450504a
	maxSlots = 1 << 20

	// offsets in element 0 (struct jp_ptt_hdr) and in a slot
	hdrGen     = 8
	hdrNSlots  = 16
	hdrPending = 24
	slotTid    = 56
	slotOwner  = 60
)

// Options configure Load.
type Options struct {
	// Slots is the number of threads that can be registered at once.
	Slots int
	// Mode forces "tp_btf" or "raw_tp"; empty tries tp_btf, then raw_tp.
	Mode string
	// NoRenameTrigger leaves the task_rename program out, as on a
	// kernel without that tracepoint (for tests of the fallback).
	NoRenameTrigger bool
}

// Objects are the loaded and attached programs and their maps.
type Objects struct {
	// Slots is the BPF_F_MMAPABLE work area: element 0 is the header,
	// 1..NSlots the per-thread slots.
	Slots *ebpf.Map
	// Tids maps a thread id (or a pending registration's key, see
	// ptt_slot.h) to its slot index.
	Tids   *ebpf.Map
	NSlots int
	// Mode is "tp_btf" or "raw_tp": how the programs are attached.
	Mode string
	// Points are the interrupt stems attached; Missing those this
	// kernel lacks.
	Points  []string
	Missing []string
	// Healer says the sched_exit_tp program is attached, which puts
	// back on CPU a thread whose switch-in sched_switch did not trace
	// (kernel 6.15+).
	Healer bool
	// RenameTrigger says the task_rename program is attached, which
	// resolves a PID-namespace thread's registration as soon as the
	// thread renames itself (otherwise at its next switch-in).
	RenameTrigger bool

	coll  *ebpf.Collection
	links []link.Link

	areaMu sync.Mutex
	area   []byte // the work area mapped for Reclaim, nil until then
}

// Load loads the programs, sizes and initialises the work area, and
// attaches everything. It needs CAP_BPF and CAP_PERFMON (or root).
func Load(opts Options) (*Objects, error) {
	n := opts.Slots
	if n == 0 {
		n = DefaultSlots
	}
	if n < 1 || n > maxSlots {
		return nil, fmt.Errorf("pttbpf: %d slots asked, want 1..%d", n, maxSlots)
	}
	if miss := missingCaps(); miss != nil {
		return nil, capsError(miss)
	}
	spec, err := loadPtt()
	if err != nil {
		return nil, fmt.Errorf("pttbpf: parse embedded object: %w", err)
	}
	spec.Maps["ptt_slots"].MaxEntries = uint32(n + 1)
	spec.Maps["ptt_tids"].MaxEntries = uint32(2 * n)

	if opts.NoRenameTrigger {
		for _, mode := range []string{"tp_btf", "raw_tp"} {
			delete(spec.Programs, progName(mode, renameTP))
		}
	}
	var o *Objects
	switch opts.Mode {
	case "tp_btf", "raw_tp":
		if o, err = load(spec, opts.Mode); err != nil {
			return nil, fmt.Errorf("pttbpf: %w", err)
		}
	case "":
		var errBTF, errRaw error
		if o, errBTF = load(spec, "tp_btf"); errBTF != nil {
			if o, errRaw = load(spec, "raw_tp"); errRaw != nil {
				return nil, fmt.Errorf("pttbpf: %w; %w", errBTF, errRaw)
			}
		}
	default:
		return nil, fmt.Errorf("pttbpf: unknown mode %q (want tp_btf or raw_tp)", opts.Mode)
	}
	o.NSlots = n
	if err := o.initHeader(); err != nil {
		o.Close()
		return nil, err
	}
	if err := o.attach(spec); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// progName is the program name of a tracepoint in a mode: tracepoint
// "softirq_entry" is program "tpbtf_softirq_entry" or "rawtp_softirq_entry".
func progName(mode, tp string) string {
	return strings.ReplaceAll(mode, "_", "") + "_" + tp
}

// Optional tracepoints: the switch-in healer's, and the registration
// trigger's.
const (
	healerTP = "sched_exit_tp"
	renameTP = "task_rename"
)

func optional(tp string) bool { return tp == healerTP || tp == renameTP }

// tracepoints lists the tracepoints to attach, exits before entries
// before sched_switch: an exit whose entry was missed is ignored by the
// program, an entry whose exit was missed would leave the nesting depth
// raised until the next switch.
func tracepoints() []string {
	var tps []string
	for _, p := range IRQPoints {
		tps = append(tps, p+"_exit")
	}
	for _, p := range IRQPoints {
		tps = append(tps, p+"_entry")
	}
	return append(tps, "sched_switch", healerTP, renameTP)
}

func load(spec *ebpf.CollectionSpec, mode string) (*Objects, error) {
	s := spec.Copy()
	o := &Objects{Mode: mode}
	other := "tpbtf_"
	if mode == "tp_btf" {
		other = "rawtp_"
	}
	for name := range s.Programs {
		if strings.HasPrefix(name, other) {
			delete(s.Programs, name)
		}
	}
	// One decoding of the kernel's BTF serves the look-ups below and the
	// loader's (attach targets, relocations): it is most of the load time.
	cache := btf.NewCache()
	if mode == "tp_btf" {
		// A tp_btf program fails to load, not just to attach, when
		// its tracepoint is missing: drop those up front.
		kspec, err := cache.Kernel()
		if err != nil {
			return nil, fmt.Errorf("kernel BTF: %w", err)
		}
		for _, p := range IRQPoints {
			_, errIn := kspec.AnyTypeByName("btf_trace_" + p + "_entry")
			_, errOut := kspec.AnyTypeByName("btf_trace_" + p + "_exit")
			if errIn != nil || errOut != nil {
				delete(s.Programs, progName(mode, p+"_entry"))
				delete(s.Programs, progName(mode, p+"_exit"))
				o.Missing = append(o.Missing, p)
			}
		}
		for _, tp := range []string{healerTP, renameTP} {
			if _, err := kspec.AnyTypeByName("btf_trace_" + tp); err != nil {
				delete(s.Programs, progName(mode, tp))
			}
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{Cache: cache})
	if err != nil {
		return nil, fmt.Errorf("load %s programs: %w", mode, err)
	}
	o.coll = coll
	o.Slots = coll.Maps["ptt_slots"]
	o.Tids = coll.Maps["ptt_tids"]
	return o, nil
}

func (o *Objects) initHeader() error {
	var h [slotSize]byte
	binary.NativeEndian.PutUint64(h[0:], hdrMagic)
	binary.NativeEndian.PutUint64(h[hdrNSlots:], uint64(o.NSlots))
	if err := o.Slots.Update(uint32(0), h[:], ebpf.UpdateAny); err != nil {
		return fmt.Errorf("pttbpf: write work area header: %w", err)
	}
	return nil
}

func (o *Objects) attach(spec *ebpf.CollectionSpec) error {
	missing := map[string]bool{}
	for _, m := range o.Missing {
		missing[m] = true
	}
	attached := map[string]int{}
	for _, tp := range tracepoints() {
		stem := strings.TrimSuffix(strings.TrimSuffix(tp, "_entry"), "_exit")
		if missing[stem] {
			continue
		}
		prog := o.coll.Programs[progName(o.Mode, tp)]
		if prog == nil && optional(tp) {
			continue // dropped at load: not on this kernel
		}
		if prog == nil {
			return fmt.Errorf("pttbpf: program for %s missing from the object", tp)
		}
		var l link.Link
		var err error
		if o.Mode == "tp_btf" {
			l, err = link.AttachTracing(link.TracingOptions{Program: prog})
		} else {
			l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp, Program: prog})
		}
		if err != nil && optional(tp) {
			continue
		}
		if err != nil {
			if tp != "sched_switch" && o.Mode == "raw_tp" && errors.Is(err, os.ErrNotExist) {
				// raw_tp finds out only now; an entry without its
				// exit would be worse than neither.
				missing[stem] = true
				o.Missing = append(o.Missing, stem)
				continue
			}
			return fmt.Errorf("pttbpf: attach %s %s: %w", o.Mode, tp, err)
		}
		o.links = append(o.links, l)
		attached[stem]++
		switch tp {
		case healerTP:
			o.Healer = true
		case renameTP:
			o.RenameTrigger = true
		}
	}
	for _, p := range IRQPoints {
		if attached[p] == 2 {
			o.Points = append(o.Points, p)
		}
	}
	return nil
}

// Close detaches the programs (sched_switch first, in the reverse of
// attach order) and closes the maps. Memory mapped from Slots stays
// valid until unmapped.
func (o *Objects) Close() error {
	var errs []error
	for i := len(o.links) - 1; i >= 0; i-- {
		errs = append(errs, o.links[i].Close())
	}
	o.links = nil
	o.areaMu.Lock()
	if o.area != nil {
		errs = append(errs, unix.Munmap(o.area))
		o.area = nil
	}
	o.areaMu.Unlock()
	if o.coll != nil {
		o.coll.Close()
		o.coll = nil
	}
	return errors.Join(errs...)
}

// RecursionMisses sums, per program, the runs the kernel skipped because
// the program was already running on that CPU: lost events, which the
// PTT cannot see otherwise. For log-msg and tests.
func (o *Objects) RecursionMisses() (map[string]uint64, error) {
	out := map[string]uint64{}
	for name, p := range o.coll.Programs {
		st, err := p.Stats()
		if err != nil {
			return nil, fmt.Errorf("pttbpf: stats of %s: %w", name, err)
		}
		if st.RecursionMisses > 0 {
			out[name] = st.RecursionMisses
		}
	}
	return out, nil
}

// Stats are the programs' event counters, summed over CPUs.
type Stats struct {
	// HealedSwitchIns: switch-ins sched_switch did not trace, caught by
	// the healer (the switch's own few hundred ns are not counted).
	HealedSwitchIns uint64
	// LostSwitchOuts: switch-outs not traced; that dispatch's time is lost.
	LostSwitchOuts uint64
	// UnbalancedIRQExits: interrupt exits without a traced entry
	// (normal right after attaching).
	UnbalancedIRQExits uint64
	// StrayIRQs: interrupts still open at a context switch, closed there.
	StrayIRQs uint64
}

// Stats reads the counters.
func (o *Objects) Stats() (Stats, error) {
	m := o.coll.Maps["ptt_stats"]
	var v [4]uint64
	for i := range v {
		var percpu []uint64
		if err := m.Lookup(uint32(i), &percpu); err != nil {
			return Stats{}, fmt.Errorf("pttbpf: read stats: %w", err)
		}
		for _, n := range percpu {
			v[i] += n
		}
	}
	return Stats{v[0], v[1], v[2], v[3]}, nil
}

// Reclaim frees every slot whose owner word is owner, for a client that
// went away without unregistering its threads (a crash, or threads
// still alive at exit): it stops the BPF side charging them (tid 0),
// deletes the tid->slot entries that point at them, and clears their
// owner so that any client can claim them again. Returns how many slots
// it freed. jprof pttd calls it when a client's connection closes; the
// client must not use the slots afterwards.
func (o *Objects) Reclaim(owner uint32) (int, error) {
	if owner == 0 {
		return 0, nil
	}
	o.areaMu.Lock()
	defer o.areaMu.Unlock()
	if o.area == nil {
		page := os.Getpagesize()
		n := ((o.NSlots+1)*slotSize + page - 1) / page * page
		m, err := unix.Mmap(o.Slots.FD(), 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return 0, fmt.Errorf("pttbpf: map the work area: %w", err)
		}
		o.area = m
	}
	held := map[uint32]bool{}
	for i := 1; i <= o.NSlots; i++ {
		if atomic.LoadUint32(o.word32(i*slotSize+slotOwner)) == owner {
			atomic.StoreUint32(o.word32(i*slotSize+slotTid), 0)
			held[uint32(i)] = true
		}
	}
	if len(held) == 0 {
		return 0, nil
	}
	var (
		key     uint64
		idx     uint32
		stale   []uint64
		pending uint64
	)
	it := o.Tids.Iterate()
	for it.Next(&key, &idx) {
		if held[idx] {
			stale = append(stale, key)
			if key>>32 != 0 {
				pending++ // registered, never resolved nor withdrawn
			}
		}
	}
	if err := it.Err(); err != nil {
		return 0, fmt.Errorf("pttbpf: reclaim: list tid->slot: %w", err)
	}
	for _, k := range stale {
		if err := o.Tids.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return 0, fmt.Errorf("pttbpf: reclaim: delete tid %#x: %w", k, err)
		}
	}
	atomic.AddUint64(o.word64(hdrGen), 1) // per-CPU caches look up again
	for p := o.word64(hdrPending); pending > 0; {
		v := atomic.LoadUint64(p)
		if atomic.CompareAndSwapUint64(p, v, v-min(v, pending)) {
			break
		}
	}
	for i := range held {
		atomic.CompareAndSwapUint32(o.word32(int(i)*slotSize+slotOwner), owner, 0)
	}
	return len(held), nil
}

func (o *Objects) word32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&o.area[off])) }
func (o *Objects) word64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&o.area[off])) }
