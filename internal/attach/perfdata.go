package attach

// A JVM started with -XX:+DisableAttachMechanism never opens its attach
// socket: the trigger file and SIGQUIT only make it print a thread dump
// on its stdout, again at every SIGQUIT, until the wait runs out. The
// JDK's own tools do not wait: HotSpot publishes which services it
// offers in its hsperfdata file (/tmp/hsperfdata_<user>/<pid>, the
// shared memory jstat and jcmd -l read), as the string counter
// sun.rt.jvmCapabilities, whose first character is '1' when the attach
// mechanism is supported and '0' when it is not
// (sun.jvmstat.monitor.MonitoredVmUtil.isAttachable, which
// HotSpotAttachProvider.testAttachable asks before it attaches: "The VM
// does not support the attach mechanism"). jprof reads it the same way.
// A JVM without the file (-XX:-UsePerfData, -XX:+PerfDisableSharedMem)
// says nothing, and the attach is tried as before.
//
// The file read is the one the JVM has mapped (its path, device and
// inode in /proc/<pid>/maps), not one found by name: the name is the
// JVM's PID in its own namespace, which a JVM of another PID namespace
// sharing /tmp may have too, and a file left by a dead JVM of the same
// pid may still be there. And of the hsperfdata files the JVM has
// mapped, only its own counts, the one named by its PID as it sees it
// (NSpid): a JVM that monitors others (VisualVM, jconsole, anything that
// calls VirtualMachine.list() or reads jvmstat counters) maps their files
// too, and one of those may come first in its maps (they are in address
// order); taken for its own, a monitored JVM's -XX:+DisableAttachMechanism
// made the monitoring one unprofilable.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// perfMapping is the hsperfdata file a JVM has mapped, as its maps line
// names it: the path as the JVM sees it, and the file's device and inode.
type perfMapping struct {
	path string
	dev  uint64 // as stat's st_dev encodes it
	ino  uint64
}

// perfMappingOf reads a maps line ("addr perms offset dev inode path")
// for the hsperfdata file of the JVM whose PID in its own namespace is
// nspid: a path .../hsperfdata_<user>/<nspid>. Another JVM's file it
// maps (a monitoring tool's) is named by that JVM's PID, not its own.
func perfMappingOf(line []byte, nspid int) (perfMapping, bool) {
	f := strings.Fields(string(line))
	if len(f) != 6 {
		return perfMapping{}, false // anonymous, or " (deleted)"
	}
	p := f[5]
	if !strings.HasPrefix(path.Base(path.Dir(p)), "hsperfdata_") || path.Base(p) != strconv.Itoa(nspid) {
		return perfMapping{}, false
	}
	ino, err := strconv.ParseUint(f[4], 10, 64)
	if err != nil || ino == 0 {
		return perfMapping{}, false
	}
	// The device as the kernel prints it: major:minor, in hex.
	maj, min, ok := strings.Cut(f[3], ":")
	if !ok {
		return perfMapping{}, false
	}
	major, err1 := strconv.ParseUint(maj, 16, 32)
	minor, err2 := strconv.ParseUint(min, 16, 32)
	if err1 != nil || err2 != nil {
		return perfMapping{}, false
	}
	return perfMapping{path: p, dev: unix.Mkdev(uint32(major), uint32(minor)), ino: ino}, true
}

// Offsets in a PerfData buffer, version 2 (HotSpot's perfMemory.hpp,
// PerfDataPrologue and PerfDataEntry; jdk.internal.jvmstat's
// v2_0/PerfDataBufferPrologue and PerfDataBuffer).
const (
	pdMagicOff       = 0 // 0xcafec0c0, in big-endian byte order
	pdByteOrderOff   = 4 // 0 big endian, 1 little endian
	pdMajorOff       = 5
	pdAccessibleOff  = 7
	pdUsedOff        = 8
	pdEntryOffsetOff = 24
	pdNumEntriesOff  = 28
	pdPrologueSize   = 32

	peLengthOff     = 0
	peNameOffOff    = 4
	peVectorLenOff  = 8
	peDataTypeOff   = 12
	peDataOffsetOff = 16
	peHeaderSize    = 20
)

// maxPerfData bounds what is read of the file (PerfDataMemorySize is
// 64 KiB by default; the counter is among the first).
const maxPerfData = 4 << 20

// perfString finds the string counter name in a PerfData buffer. ok is
// false when the buffer is not one, not yet accessible (a JVM starting)
// or has no such counter.
func perfString(b []byte, name string) (string, bool) {
	if len(b) < pdPrologueSize || !bytes.Equal(b[pdMagicOff:pdMagicOff+4], []byte{0xca, 0xfe, 0xc0, 0xc0}) {
		return "", false
	}
	var order binary.ByteOrder = binary.BigEndian
	if b[pdByteOrderOff] == 1 {
		order = binary.LittleEndian
	}
	if b[pdMajorOff] != 2 || b[pdAccessibleOff] == 0 {
		return "", false
	}
	used := int(int32(order.Uint32(b[pdUsedOff:])))
	if used > 0 && used < len(b) {
		b = b[:used]
	}
	off := int(int32(order.Uint32(b[pdEntryOffsetOff:])))
	n := int(int32(order.Uint32(b[pdNumEntriesOff:])))
	for i := 0; i < n && off >= pdPrologueSize && off+peHeaderSize <= len(b) && off%4 == 0; i++ {
		e := b[off:]
		length := int(int32(order.Uint32(e[peLengthOff:])))
		if length <= 0 || length > len(e) {
			break
		}
		e = e[:length]
		nameOff := int(int32(order.Uint32(e[peNameOffOff:])))
		vlen := int(int32(order.Uint32(e[peVectorLenOff:])))
		dataOff := int(int32(order.Uint32(e[peDataOffsetOff:])))
		if nameOff >= peHeaderSize && nameOff < length && cString(e[nameOff:]) == name {
			// A string is a vector of bytes ('B'), NUL-terminated.
			if e[peDataTypeOff] != 'B' || vlen <= 0 || dataOff < 0 || dataOff+vlen > length {
				return "", false
			}
			return cString(e[dataOff : dataOff+vlen]), true
		}
		off += length
	}
	return "", false
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// readCapabilities reads sun.rt.jvmCapabilities from the JVM's mapped
// hsperfdata file; ok is false when it cannot be told.
func (t *Target) readCapabilities() (string, bool) {
	if t.perf.path == "" {
		return "", false
	}
	f, err := os.OpenFile(t.Path(t.perf.path), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	var st unix.Stat_t
	// The very file mapped: a file of that name is another's when its
	// device or inode differ (an earlier JVM's left behind, replaced).
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Dev != t.perf.dev || st.Ino != t.perf.ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPerfData))
	if err != nil {
		return "", false
	}
	return perfString(b, "sun.rt.jvmCapabilities")
}

// attachDisabled says whether the JVM's hsperfdata says it does not
// support the attach mechanism (-XX:+DisableAttachMechanism); false when
// it cannot be told.
func (t *Target) attachDisabled() bool {
	caps, ok := t.readCapabilities()
	return ok && strings.HasPrefix(caps, "0")
}

// ErrNoAttach: the JVM does not support the attach mechanism.
var ErrNoAttach = errors.New("attach mechanism disabled")

// CheckAttachable refuses, before anything is sent to the JVM, one whose
// hsperfdata says it does not support the attach mechanism: waiting for
// its attach socket would only make it print thread dumps (see above).
func (t *Target) CheckAttachable() error {
	if !t.NoAttach {
		return nil
	}
	return &openError{fmt.Sprintf("JVM %s does not support the attach mechanism: it runs with -XX:+DisableAttachMechanism "+
		"(its hsperfdata counter sun.rt.jvmCapabilities says so), so nothing can be loaded into it or asked of it (jcmd "+
		"is refused too); restart it without that option, or with -agentpath:libjprof.so", t), ErrNoAttach}
}
