package reports

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The log-gen format: one line per method event (JProf's GENERIC mode).
//
//	 libjprof log-gen
//	 Process_Number_ID=4242
//	 Note: PTT backend: ebpf
//	 Units :: PTT_TIME PTT_INSTS
//	 : 1 = PTT_TIME (ns, calibrated)
//	 : 2 = PTT_INSTS (instructions, calibrated)
//	120 3400 > J:hellop.main([Ljava/lang/String;)V 0000b718_main
//	15 200 > J:hellop.myA()V 0000b718_main
//	8 90 < J:hellop.myA()V 0000b718_main
//	0 0 <! J:hellop.main([Ljava/lang/String;)V 0000b718_main
//
// Header lines start with a space; the Units line lists the metric names
// (" Units :: none" when there are none) and the " : i = ..." lines after
// it give their units as in log-rt (a reader does without them). Every
// other line is an event:
//
//	<v1> ... <vk> <kind> <name> <thread>
//
// exactly one space apart, kind ">" (entry), "<" (exit) or "<!" (exit by
// exception). A log-gen written for post-processing calibration (the
// agent's RAWGEN) carries raw deltas and, before the kind, the event's
// calibration key as "s<key>": "<v1> ... <vk> s<key> <kind> <name> <thread>",
// or "u<key>" for an event whose delta must not lower the key's minimum
// (it spans a dispatch, an interrupt or a restart). Values are the metric
// amounts since the previous event on the same thread. Names are escaped
// (see [EscapeName]), so they may hold any bytes: the method name as one
// token, its spaces escaped too ([AppendEscapedToken]); the thread comes
// last and runs to the end of the line, so its spaces stay
// ("0000b71c_Reference Handler"). Every line ends with a newline, so a
// file cut inside a line is detected.

// EventKind is the transition a log-gen event records.
type EventKind int

const (
	Entry         EventKind = iota // method entry, ">"
	Exit                           // normal method exit, "<"
	ExceptionExit                  // exit by a thrown exception, "<!"
)

func (k EventKind) String() string {
	switch k {
	case Entry:
		return ">"
	case Exit:
		return "<"
	case ExceptionExit:
		return "<!"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one method entry or exit on a thread.
type Event struct {
	Thread string
	Kind   EventKind
	Name   string // type prefix + class.method+signature; any bytes
	// Values holds, per metric, the amount since the previous event on
	// this thread: it belongs to whatever ran on the thread before this
	// event, not to Name.
	Values []uint64
	// Key is the event's calibration key (package calibration) when
	// HasKey: the sequence of method types and transitions that ends
	// with this event, for post-processing calibration.
	Key    int
	HasKey bool
	// Unclean (with HasKey): calibrate this event, but do not learn the
	// key's minimum from it.
	Unclean bool
}

const (
	logGenTitle = " libjprof log-gen"
	unitsPrefix = " Units :: "
)

// LogGenReader reads a log-gen file one event at a time without
// allocating per line: names are interned, so a method's name is the same
// string in every event, and Values is reused.
//
//	r, err := NewLogGenReader(f)
//	for r.Next() {
//		ev := r.Event()
//	}
//	err = r.Err()
type LogGenReader struct {
	br      *bufio.Reader
	line    int
	pid     int
	metrics []Metric
	notes   []string

	in      *interner
	vals    []uint64
	kind    EventKind
	key     int // calibration key of the current event, -1 if none
	unclean bool
	name    int32 // interned ids of the current event
	thr     int32

	lastThr []byte // last thread name seen, to skip its lookup
	err     error
	bin     *binState // nil for the text format
	frames  int
	// truncated is the file's truncation line (see TruncationLine), once
	// read.
	truncated string
	// sizeLimited is the file's size limit line (see SizeLimitLine), once
	// read; notWritten its count, or the binary end frame's.
	sizeLimited string
	notWritten  uint64
}

// interner maps names to dense ids; lookups by []byte do not allocate.
type interner struct {
	ids  map[string]int32
	strs []string
}

func (in *interner) id(b []byte) int32 {
	if id, ok := in.ids[string(b)]; ok {
		return id
	}
	return in.add(string(b))
}

func (in *interner) idString(s string) int32 {
	if id, ok := in.ids[s]; ok {
		return id
	}
	return in.add(s)
}

func (in *interner) add(s string) int32 {
	if in.ids == nil {
		in.ids = make(map[string]int32)
	}
	id := int32(len(in.strs))
	in.ids[s] = id
	in.strs = append(in.strs, s)
	return id
}

// NewLogGenReader reads the header of a log-gen file.
func NewLogGenReader(r io.Reader) (*LogGenReader, error) {
	lr := &LogGenReader{br: bufio.NewReaderSize(r, 256<<10), thr: -1, in: &interner{}}
	if err := lr.readHeader(); err != nil {
		return nil, fmt.Errorf("log-gen line %d: %w", lr.line, err)
	}
	return lr, nil
}

// PID returns the process id of the header.
func (lr *LogGenReader) PID() int { return lr.pid }

// Metrics returns the metrics of the header. Unit and Calibrated are
// zero if the header has only the Units line.
func (lr *LogGenReader) Metrics() []Metric { return lr.metrics }

// Notes returns the header's notes.
func (lr *LogGenReader) Notes() []string { return lr.notes }

// readLine returns the next line without its newline; io.EOF at a clean
// end of file.
func (lr *LogGenReader) readLine() ([]byte, error) {
	line, err := lr.br.ReadSlice('\n')
	if len(line) > 0 {
		lr.line++
	}
	switch {
	case err == nil:
		return line[:len(line)-1], nil
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("line longer than %d bytes", lr.br.Size())
	case err == io.EOF && len(line) > 0:
		return nil, fmt.Errorf("truncated: last line %q has no newline", line)
	}
	return nil, err
}

// peekHeader reports whether the next line is a header line.
func (lr *LogGenReader) peekHeader() bool {
	b, _ := lr.br.Peek(1)
	return len(b) == 1 && b[0] == ' '
}

func (lr *LogGenReader) readHeader() error {
	next := func(what string) ([]byte, error) {
		line, err := lr.readLine()
		if err == io.EOF {
			if lr.line == 0 {
				return nil, fmt.Errorf("empty file, expected %s", what)
			}
			lr.line++
			return nil, fmt.Errorf("unexpected end of file, expected %s", what)
		}
		return line, err
	}
	line, err := next(strconv.Quote(logGenTitle))
	if err != nil {
		return err
	}
	switch string(line) {
	case logGenTitle:
	case logGenBinTitle:
		lr.bin = &binState{methods: map[uint64]string{}, names: map[uint64]int32{}, threads: map[uint64]int32{}}
	default:
		return fmt.Errorf("not a libjprof log-gen file: expected %q, got %q", logGenTitle, line)
	}
	if line, err = next(strconv.Quote(pidPrefix + "N")); err != nil {
		return err
	}
	v, ok := bytes.CutPrefix(line, []byte(pidPrefix))
	if lr.pid, err = strconv.Atoi(string(v)); !ok || err != nil {
		return fmt.Errorf("expected %q, got %q", pidPrefix+"N", line)
	}
	for {
		if line, err = next(strconv.Quote(unitsPrefix + "NAMES")); err != nil {
			return err
		}
		note, ok := bytes.CutPrefix(line, []byte(notePrefix))
		if !ok {
			break
		}
		text, err := UnescapeName(string(note))
		if err != nil {
			return fmt.Errorf("note: %w", err)
		}
		lr.notes = append(lr.notes, text)
	}
	units, ok := bytes.CutPrefix(line, []byte(unitsPrefix))
	if !ok {
		return fmt.Errorf("expected %q, got %q", unitsPrefix+"NAMES", line)
	}
	if string(units) != "none" {
		for _, n := range strings.Split(string(units), " ") {
			if n == "" {
				return fmt.Errorf("bad metric names %q", units)
			}
			lr.metrics = append(lr.metrics, Metric{Name: n})
		}
	}
	// Optional details of each metric, all or none.
	for i := range lr.metrics {
		if !lr.peekHeader() {
			if i == 0 {
				break
			}
			lr.line++
			return fmt.Errorf("expected details of metric %d", i+1)
		}
		if line, err = next("metric details"); err != nil {
			return err
		}
		m, err := parseMetricLine(string(line), i+1)
		if err != nil {
			return err
		}
		if m.Name != lr.metrics[i].Name {
			return fmt.Errorf("metric %d is %s in the Units line but %s here", i+1, lr.metrics[i].Name, m.Name)
		}
		lr.metrics[i] = m
	}
	lr.vals = make([]uint64, len(lr.metrics))
	if lr.bin != nil {
		lr.bin.rec.Values = make([]uint64, len(lr.metrics))
		if b, _ := lr.br.Peek(len(keysLine) + 1); string(b) == keysLine+"\n" {
			lr.readLine()
			lr.bin.keyed = true
		}
		return nil
	}
	if lr.peekHeader() {
		line, _ := lr.readLine()
		// A file cut right after its header (a GENMAX below it, a disk
		// full at once) ends with its closing line: no event, said so.
		if err := lr.truncation(line); err != nil {
			lr.err = err
			if err == io.EOF {
				return nil
			}
			return err
		}
		return fmt.Errorf("expected an event, got %q", line)
	}
	return nil
}

// Next reads the next event; it returns false at the end of the file or
// on an error, which Err returns.
func (lr *LogGenReader) Next() bool {
	if lr.err != nil {
		return false
	}
	if lr.bin != nil {
		if err := lr.nextBinary(); err != nil {
			if err != io.EOF {
				lr.err = fmt.Errorf("binary log-gen frame %d: %w", lr.frames, err)
			} else {
				lr.err = io.EOF
			}
			return false
		}
		return true
	}
	line, err := lr.readLine()
	if err == nil {
		if err = lr.truncation(line); err == nil {
			err = lr.parse(line)
		}
	}
	if err != nil {
		if err != io.EOF {
			lr.err = fmt.Errorf("log-gen line %d: %w", lr.line, err)
		} else {
			lr.err = io.EOF
		}
		return false
	}
	return true
}

// truncation returns io.EOF when line is a closing line (the truncation
// line the agent ends a file with after a write error, or the size limit
// line, see SizeLimitLine), and remembers it; nothing may follow it.
func (lr *LogGenReader) truncation(line []byte) error {
	if text, n, ok := isSizeLimit(line); ok {
		lr.sizeLimited, lr.notWritten = text, n
	} else if text, ok := isTruncation(line); ok {
		lr.truncated = text
	} else {
		return nil
	}
	if _, err := lr.br.ReadByte(); err != io.EOF {
		what := "truncation"
		if lr.sizeLimited != "" {
			what = "size limit"
		}
		return fmt.Errorf("data after the %s line", what)
	}
	return io.EOF
}

// Truncated is the truncation line (without its leading " *** ") of a
// file the agent cut short after a write error, once Next has reached
// it; empty for a whole file.
func (lr *LogGenReader) Truncated() string { return lr.truncated }

// SizeLimited is the size limit line (without its leading " *** ") of a
// file that reached its size limit (GENMAX), once Next has reached the
// end: the file holds the first events only. A binary file whose end
// frame counts events not written but that has no such line (an older
// agent's) gets one built from that count. Empty for a file that left
// no event out.
func (lr *LogGenReader) SizeLimited() string {
	if lr.sizeLimited == "" && lr.notWritten > 0 {
		return strings.TrimPrefix(SizeLimitLine(0, lr.notWritten), " *** ")
	}
	return lr.sizeLimited
}

// NotWritten is how many events the file left out past its size limit
// (GENMAX), known once Next has reached the end.
func (lr *LogGenReader) NotWritten() uint64 { return lr.notWritten }

// Err returns the error that stopped Next, or nil at a clean end of file.
func (lr *LogGenReader) Err() error {
	if lr.err == io.EOF {
		return nil
	}
	return lr.err
}

// Event returns the current event. Its Values are overwritten by the
// next call to Next.
func (lr *LogGenReader) Event() Event {
	return Event{
		Thread:  lr.in.strs[lr.thr],
		Kind:    lr.kind,
		Name:    lr.in.strs[lr.name],
		Values:  lr.vals,
		Key:     max(lr.key, 0),
		HasKey:  lr.key >= 0,
		Unclean: lr.unclean,
	}
}

// parse reads an event line and interns its names.
func (lr *LogGenReader) parse(line []byte) error {
	kind, key, name, thr, err := parseEvent(line, lr.vals)
	if err != nil {
		return err
	}
	lr.kind = kind
	lr.key, lr.unclean = key, false
	if key >= 0 {
		lr.key, lr.unclean = key&^uncleanBit, key&uncleanBit != 0
	}
	lr.name = lr.in.id(name)
	// Consecutive events are mostly on one thread: compare bytes rather
	// than hash them.
	if lr.thr < 0 || !bytes.Equal(thr, lr.lastThr) {
		lr.thr = lr.in.id(thr)
		lr.lastThr = append(lr.lastThr[:0], thr...)
	}
	return nil
}

// uncleanBit marks a "u<key>" key in parseEvent's result; keys are < 8192.
const uncleanBit = 1 << 20

// parseEvent splits "<v1> ... <vk> [s<key>] <kind> <name> <thread>" into
// vals (k = len(vals)), the key (-1 if absent), the kind and the two
// names, unescaped. The names alias line unless they had escapes. It is
// the hot loop of post-processing, so it walks the bytes once by hand.
func parseEvent(line []byte, vals []uint64) (kind EventKind, key int, name, thread []byte, err error) {
	key = -1
	i := 0
	for m := range vals {
		var v uint64
		// A calibrated value may be negative (jprof calibrate): it is
		// kept as its two's complement, which sums right.
		neg := i < len(line) && line[i] == '-'
		if neg {
			i++
		}
		j := i
		for ; i < len(line); i++ {
			c := line[i] - '0'
			if c > 9 {
				break
			}
			v = v*10 + uint64(c)
		}
		if i == j || i == len(line) || line[i] != ' ' {
			return 0, -1, nil, nil, fmt.Errorf("expected %d values, a kind, a method and a thread, got %q", len(vals), line)
		}
		if i-j > 19 { // may have wrapped: let strconv decide
			if v, err = strconv.ParseUint(string(line[j:i]), 10, 64); err != nil {
				return 0, -1, nil, nil, fmt.Errorf("value %d overflows", m+1)
			}
		}
		if neg {
			v = -v
		}
		vals[m] = v
		i++
	}
	rest := line[i:]
	if len(rest) > 0 && (rest[0] == 's' || rest[0] == 'u') {
		j := 1
		key = 0
		for ; j < len(rest) && rest[j] >= '0' && rest[j] <= '9' && j < 8; j++ {
			key = key*10 + int(rest[j]-'0')
		}
		if j == 1 || j >= len(rest) || rest[j] != ' ' {
			return 0, -1, nil, nil, fmt.Errorf("bad sequence key in %q", line)
		}
		if rest[0] == 'u' {
			key |= uncleanBit
		}
		rest = rest[j+1:]
	}
	switch {
	case len(rest) > 2 && rest[0] == '>' && rest[1] == ' ':
		kind, rest = Entry, rest[2:]
	case len(rest) > 2 && rest[0] == '<' && rest[1] == ' ':
		kind, rest = Exit, rest[2:]
	case len(rest) > 3 && rest[0] == '<' && rest[1] == '!' && rest[2] == ' ':
		kind, rest = ExceptionExit, rest[3:]
	default:
		return 0, -1, nil, nil, fmt.Errorf("expected %d values then >, < or <!, got %q", len(vals), line)
	}
	sp := bytes.IndexByte(rest, ' ')
	if sp <= 0 || sp == len(rest)-1 {
		return 0, -1, nil, nil, fmt.Errorf("expected a method and a thread, got %q", line)
	}
	if name, err = unescapeBytes(rest[:sp]); err == nil {
		thread, err = unescapeBytes(rest[sp+1:])
	}
	if err != nil {
		return 0, -1, nil, nil, err
	}
	return kind, key, name, thread, nil
}
