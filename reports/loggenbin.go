package reports

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The binary log-gen format: the same events as the text format in a
// tenth of the bytes, written by the agent without formatting. It starts
// with the text header under its own title,
//
//	libjprof log-gen binary 1
//	Process_Number_ID=4242
//	Note: ...
//	Units :: PTT_TIME
//	: 1 = PTT_TIME (ns, calibrated)
//	Keys: yes
//
// (" Keys: yes" when records carry calibration keys, RAWGEN) followed by
// frames, each a tag byte and unsigned LEB128 varints:
//
//	'M' handle len name    a method's name (without type letter)
//	'T' id len name        a thread's log-rt root name
//	'B' id len records     a run of one thread's events, in order
//	'E' events notwritten  the end: events written, events past GENMAX
//
// A file that left events out past GENMAX has, after its end frame, a
// newline and the size limit line (see SizeLimitLine), so that its last
// line says so, whole, as a text log-gen's does.
//
// A file the agent cut short after a write error ends, in place of the
// next frame, with the truncation line (see TruncationLine), which
// starts with a space, a tag no frame has.
//
// A method or thread is defined before the first block that names it.
// A record is a flags byte (transition in bits 0-1, type in bits 2-4,
// key unclean in bit 6, method not recorded for lack of memory in bit 7),
// the method's handle (absent with bit 7), the key (with " Keys: yes"),
// and one value per metric. A file without its 'E' frame was cut short.
const (
	logGenBinTitle = " libjprof log-gen binary 1"
	keysLine       = " Keys: yes"
	notRecorded    = "<not-recorded:out-of-memory>"
)

// GenRecord is one decoded binary log-gen record.
type GenRecord struct {
	Kind    EventKind
	Type    byte // JProf type letter
	Method  uint64
	Lost    bool // the method was not recorded (no memory)
	Key     int
	HasKey  bool
	Unclean bool
	Values  []uint64 // len = metrics; reused
}

const genTypeLetters = "iIjJnNCO"

// DecodeGenRecord decodes the record at the start of data into r (whose
// Values has one slot per metric) and returns its length.
func DecodeGenRecord(data []byte, keyed bool, r *GenRecord) (int, error) {
	if len(data) == 0 {
		return 0, errors.New("empty record")
	}
	f := data[0]
	i := 1
	r.Kind = EventKind(f & 3)
	if r.Kind > ExceptionExit {
		return 0, fmt.Errorf("bad transition %d", f&3)
	}
	r.Type = genTypeLetters[(f>>2)&7]
	r.Lost = f&0x80 != 0
	r.Unclean = f&0x40 != 0
	r.HasKey = keyed
	uv := func() (uint64, error) {
		v, n := binary.Uvarint(data[i:])
		if n <= 0 {
			return 0, errors.New("record cut short")
		}
		i += n
		return v, nil
	}
	var err error
	r.Method = 0
	if !r.Lost {
		if r.Method, err = uv(); err != nil {
			return 0, err
		}
	}
	r.Key = 0
	if keyed {
		k, err := uv()
		if err != nil {
			return 0, err
		}
		r.Key = int(k)
	}
	for m := range r.Values {
		if r.Values[m], err = uv(); err != nil {
			return 0, err
		}
	}
	return i, nil
}

// LogGenBinWriter writes the binary log-gen format. Like csv.Writer it
// keeps the first error and buffers: call End at the end.
type LogGenBinWriter struct {
	w   *bufio.Writer
	n   int64 // bytes written
	err error
	tmp [2 * binary.MaxVarintLen64]byte
}

// NewLogGenBinWriter writes the header.
func NewLogGenBinWriter(w io.Writer, pid int, metrics []Metric, keyed bool, notes ...string) *LogGenBinWriter {
	bw := &LogGenBinWriter{w: bufio.NewWriterSize(w, 256<<10)}
	var hdr strings.Builder
	tw := NewLogGenWriter(&hdr, pid, metrics, notes...)
	if err := tw.Flush(); err != nil {
		bw.err = err
		return bw
	}
	h := strings.Replace(hdr.String(), logGenTitle+"\n", logGenBinTitle+"\n", 1)
	if keyed {
		h += keysLine + "\n"
	}
	bw.write([]byte(h))
	return bw
}

func (bw *LogGenBinWriter) write(b []byte) {
	if bw.err != nil {
		return
	}
	n, err := bw.w.Write(b)
	bw.n += int64(n)
	bw.err = err
}

func (bw *LogGenBinWriter) frame(tag byte, id uint64, payload []byte) {
	b := append(bw.tmp[:0], tag)
	b = binary.AppendUvarint(b, id)
	b = binary.AppendUvarint(b, uint64(len(payload)))
	bw.write(b)
	bw.write(payload)
}

// Size is the number of bytes written so far.
func (bw *LogGenBinWriter) Size() int64 { return bw.n }

// Method defines a method handle's name.
func (bw *LogGenBinWriter) Method(h uint64, name []byte) error { bw.frame('M', h, name); return bw.err }

// Thread defines a thread id's root name.
func (bw *LogGenBinWriter) Thread(id uint64, root string) error {
	bw.frame('T', id, []byte(root))
	return bw.err
}

// Block writes a run of one thread's encoded records.
func (bw *LogGenBinWriter) Block(thread uint64, records []byte) error {
	bw.frame('B', thread, records)
	return bw.err
}

// End writes the end frame and flushes; with notWritten events left out
// past the size limit of limit bytes (GENMAX), the size limit line after
// it.
func (bw *LogGenBinWriter) End(events, notWritten uint64, limit int64) error {
	b := append(bw.tmp[:0], 'E')
	b = binary.AppendUvarint(b, events)
	b = binary.AppendUvarint(b, notWritten)
	bw.write(b)
	if notWritten > 0 {
		bw.write([]byte("\n" + SizeLimitLine(limit, notWritten) + "\n"))
	}
	if bw.err == nil {
		bw.err = bw.w.Flush()
	}
	return bw.err
}

// binState is a LogGenReader's state in a binary file.
type binState struct {
	keyed    bool
	methods  map[uint64]string // handle -> name
	names    map[uint64]int32  // type<<56|handle -> interned "T:name"
	threads  map[uint64]int32  // id -> interned root name
	block    []byte            // rest of the current block
	blockThr int32
	rec      GenRecord
	ended    bool
}

// readFrameHeader reads a tag and the first varint of a frame.
func (lr *LogGenReader) uvarint() (uint64, error) {
	v, err := binary.ReadUvarint(lr.br)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return v, err
}

func (lr *LogGenReader) payload() ([]byte, error) {
	n, err := lr.uvarint()
	if err != nil {
		return nil, err
	}
	if n > 1<<26 {
		return nil, fmt.Errorf("frame of %d bytes is too large", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(lr.br, b); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return b, nil
}

// nextBinary reads the next event of a binary file.
func (lr *LogGenReader) nextBinary() error {
	bs := lr.bin
	for len(bs.block) == 0 {
		if bs.ended {
			c, err := lr.br.ReadByte()
			if err == io.EOF {
				return io.EOF
			}
			if c == '\n' {
				line, err := lr.br.ReadSlice('\n')
				if err == nil {
					if _, _, ok := isSizeLimit(line[:len(line)-1]); ok {
						return lr.truncation(line[:len(line)-1])
					}
				}
			}
			return errors.New("data after the end frame")
		}
		lr.frames++
		tag, err := lr.br.ReadByte()
		if err == io.EOF {
			return errors.New("truncated: no end frame")
		}
		if err != nil {
			return err
		}
		switch tag {
		case 'M', 'T', 'B':
			id, err := lr.uvarint()
			if err != nil {
				return fmt.Errorf("frame %c: %w", tag, err)
			}
			p, err := lr.payload()
			if err != nil {
				return fmt.Errorf("frame %c: %w", tag, err)
			}
			switch tag {
			case 'M':
				bs.methods[id] = string(p)
			case 'T':
				bs.threads[id] = lr.in.id(p)
			case 'B':
				thr, ok := bs.threads[id]
				if !ok {
					return fmt.Errorf("block of undefined thread %d", id)
				}
				bs.block, bs.blockThr = p, thr
			}
		case ' ': // the truncation line of a file cut by a write error
			lr.br.UnreadByte()
			line, err := lr.br.ReadSlice('\n')
			if err != nil {
				return fmt.Errorf("truncation line: %w", err)
			}
			if _, ok := isTruncation(line[:len(line)-1]); !ok {
				return fmt.Errorf("bad frame tag 0x%02x", tag)
			}
			return lr.truncation(line[:len(line)-1])
		case 'E':
			if _, err := lr.uvarint(); err != nil {
				return fmt.Errorf("end frame: %w", err)
			}
			if lr.notWritten, err = lr.uvarint(); err != nil {
				return fmt.Errorf("end frame: %w", err)
			}
			bs.ended = true
		default:
			return fmt.Errorf("bad frame tag 0x%02x", tag)
		}
	}
	r := &bs.rec
	n, err := DecodeGenRecord(bs.block, bs.keyed, r)
	if err != nil {
		return err
	}
	bs.block = bs.block[n:]
	lr.kind, lr.thr = r.Kind, bs.blockThr
	lr.key, lr.unclean = -1, false
	if r.HasKey {
		lr.key, lr.unclean = r.Key, r.Unclean
	}
	k := uint64(r.Type)<<56 | r.Method
	if r.Lost {
		k = 1<<63 | uint64(r.Type)
	}
	id, ok := bs.names[k]
	if !ok {
		m := notRecorded
		if !r.Lost {
			if m, ok = bs.methods[r.Method]; !ok {
				return fmt.Errorf("undefined method %d", r.Method)
			}
		}
		id = lr.in.idString(string(r.Type) + ":" + m)
		bs.names[k] = id
	}
	lr.name = id
	copy(lr.vals, r.Values)
	return nil
}
