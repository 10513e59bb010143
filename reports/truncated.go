package reports

import (
	"bytes"
	"fmt"
	"strconv"
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

// A log-gen that reached its size limit (the agent's GENMAX) is whole up
// to the limit but holds only the first events: it ends with a line that
// says how many it left out,
//
//	 *** libjprof: size limit (GENMAX) of 102400 bytes reached; 92852 events not written
//
// (in a binary log-gen after the end frame and a newline, so that
// `tail -1` shows it in both formats). Readers end there too, keep the count
// ([LogGenReader.NotWritten], [Profile.NotWritten]) and say the file is
// partial ([Profile.SizeLimited]): a tree rebuilt from it misses the
// calls of every event past the limit.

const sizeLimitPrefix = " *** libjprof: size limit (GENMAX)"

// SizeLimitLine is the closing line of a log-gen that reached its size
// limit of limit bytes (0: not known, for a copy of a file that did not
// say) and left notWritten events out.
func SizeLimitLine(limit int64, notWritten uint64) string {
	if limit <= 0 {
		return fmt.Sprintf("%s reached; %d events not written", sizeLimitPrefix, notWritten)
	}
	return fmt.Sprintf("%s of %d bytes reached; %d events not written", sizeLimitPrefix, limit, notWritten)
}

// isSizeLimit says whether line is a size limit's closing line, and
// returns its text without the leading blank and stars, and its count.
func isSizeLimit(line []byte) (string, uint64, bool) {
	if !bytes.HasPrefix(line, []byte(sizeLimitPrefix)) {
		return "", 0, false
	}
	_, tail, ok := bytes.Cut(line, []byte("reached; "))
	num, ok2 := bytes.CutSuffix(tail, []byte(" events not written"))
	n, err := strconv.ParseUint(string(num), 10, 64)
	if !ok || !ok2 || err != nil {
		return "", 0, false
	}
	return strings.TrimPrefix(string(line), " *** "), n, true
}
