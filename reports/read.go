package reports

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// Format is the kind of file a profile was read from.
type Format int

const (
	FormatLogRT  Format = iota + 1 // log-rt: a call tree
	FormatLogGen                   // log-gen: events, rebuilt into a call tree
)

func (f Format) String() string {
	switch f {
	case FormatLogRT:
		return "log-rt"
	case FormatLogGen:
		return "log-gen"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ReadProfile reads a log-rt or a log-gen file, telling them apart by
// their title line, and returns its call tree (rebuilt with
// [BuildProfile] for a log-gen).
func ReadProfile(r io.Reader) (*Profile, Format, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(256) // enough for the title and an error message
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, 0, err
	}
	switch {
	case bytes.HasPrefix(head, []byte(logRTTitle+"\n")):
		p, err := ParseLogRT(br)
		return p, FormatLogRT, err
	case bytes.HasPrefix(head, []byte(logGenTitle+"\n")), bytes.HasPrefix(head, []byte(logGenBinTitle+"\n")):
		p, err := BuildProfile(br)
		return p, FormatLogGen, err
	case len(head) == 0:
		return nil, 0, fmt.Errorf("empty file, expected a libjprof log-rt or log-gen")
	}
	line, _, _ := bytes.Cut(head, []byte("\n"))
	// Enough of it to tell what the file is (a binary file has no lines).
	if len(line) > 40 {
		line = append(line[:40:40], "..."...)
	}
	return nil, 0, fmt.Errorf("line 1: expected %q or %q, got %q: not a libjprof log-rt or log-gen", logRTTitle, logGenTitle, line)
}
