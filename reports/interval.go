package reports

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Every log-rt says the interval its counts cover: when it began and
// ended (wall clock, and monotonic time since the agent loaded), and
// what the counts are relative to.

// Interval is the time a log-rt's counts cover: from Start (the VM
// starting collection, the last reset, or the previous interval flush, as
// Counts says) to End (when the report was taken).
type Interval struct {
	Start, End time.Time // wall clock
	// StartVM and EndVM are the same moments on the monotonic clock,
	// from the agent's load at VM start: immune to the wall clock's
	// steps, and comparable across the log-rt files of one JVM.
	StartVM, EndVM time.Duration
	Counts         IntervalCounts
}

// IntervalCounts says what a log-rt's counts are relative to.
type IntervalCounts string

const (
	// CumulativeSinceStart: everything since collection first started.
	CumulativeSinceStart IntervalCounts = "cumulative-since-start"
	// CumulativeSinceReset: everything since the last reset (rtdriver
	// reset or end).
	CumulativeSinceReset IntervalCounts = "cumulative-since-reset"
	// SinceFlush: only what happened since the previous interval flush
	// (rtdriver flush=interval).
	SinceFlush IntervalCounts = "since-previous-flush"
)

const (
	intervalStart  = " Interval_Start="
	intervalEnd    = " Interval_End="
	intervalCounts = " Interval_Counts="
)

// intervalTime is "<RFC 3339 UTC> vm+<seconds>s".
func intervalTime(t time.Time, vm time.Duration) string {
	return fmt.Sprintf("%s vm+%.9fs", t.UTC().Format(time.RFC3339Nano), vm.Seconds())
}

func parseIntervalTime(line []byte, prefix string) (time.Time, time.Duration, error) {
	v, ok := bytes.CutPrefix(line, []byte(prefix))
	if !ok {
		return time.Time{}, 0, fmt.Errorf("expected %q, got %q", prefix+"TIME vm+SECONDS", line)
	}
	wall, mono, ok := strings.Cut(string(v), " vm+")
	if !ok {
		return time.Time{}, 0, fmt.Errorf("expected %q, got %q", prefix+"TIME vm+SECONDS", line)
	}
	t, err := time.Parse(time.RFC3339Nano, wall)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("%s: %w", strings.TrimSpace(prefix), err)
	}
	d, err := time.ParseDuration(mono)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("%s: %w", strings.TrimSpace(prefix), err)
	}
	return t, d, nil
}

// parseInterval reads the three Interval_ lines, the first in line.
func parseInterval(lr *lineReader, line []byte) (*Interval, error) {
	iv := &Interval{}
	var err error
	if iv.Start, iv.StartVM, err = parseIntervalTime(line, intervalStart); err != nil {
		return nil, err
	}
	if line, err = lr.next(strconv.Quote(intervalEnd + "TIME vm+SECONDS")); err != nil {
		return nil, err
	}
	if iv.End, iv.EndVM, err = parseIntervalTime(line, intervalEnd); err != nil {
		return nil, err
	}
	if line, err = lr.next(strconv.Quote(intervalCounts + "KIND")); err != nil {
		return nil, err
	}
	v, ok := bytes.CutPrefix(line, []byte(intervalCounts))
	switch c := IntervalCounts(v); {
	case ok && (c == CumulativeSinceStart || c == CumulativeSinceReset || c == SinceFlush):
		iv.Counts = c
	default:
		return nil, fmt.Errorf("expected %q with %s, %s or %s, got %q", intervalCounts+"KIND", CumulativeSinceStart, CumulativeSinceReset, SinceFlush, line)
	}
	return iv, nil
}
