package reports

import (
	"bytes"
	"fmt"
	"strings"
)

// A libjprof file whose write failed (the disk filled) is kept: it is cut
// after its last whole line, row or frame and ends with one line that
// says why and how much is missing,
//
//	 *** libjprof: write error after 1234567 bytes: no space left on device; 12345 events not written
//
// in every format (in binary log-gen the line comes where the next
// frame's tag would: no tag is a space). Readers stop there, keep what
// came before and say the file is truncated: [Profile.Truncated],
// [LogGenReader.Truncated].

const truncationPrefix = " *** libjprof: write error"

// TruncationLine is the closing line of a file cut after kept bytes by
// the write error why (its errno's text, say), unit naming what is
// counted (events, rows, records), lost of them not written. why is
// escaped to stay on the line.
func TruncationLine(kept int64, why string, lost uint64, unit string) string {
	return fmt.Sprintf("%s after %d bytes: %s; %d %s not written", truncationPrefix, kept, escapeNote(why), lost, unit)
}

// isTruncation says whether line is a truncation marker, and returns its
// text without the leading blank and stars.
func isTruncation(line []byte) (string, bool) {
	if !bytes.HasPrefix(line, []byte(truncationPrefix)) {
		return "", false
	}
	return strings.TrimPrefix(string(line), " *** "), true
}
