package bench

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// havePMU says whether a hardware CPU-cycles counter can be opened for
// this thread: without one, perf stat/record cannot count cycles or
// instructions, and the breakdown of where the agent's time goes is by
// configuration differences instead.
func havePMU() bool {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_HARDWARE,
		Config: unix.PERF_COUNT_HW_CPU_CYCLES,
		Bits:   unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}
