package reports

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names in the text formats. Thread names can hold any bytes: Java allows
// line breaks, tabs and spaces in them, and JNI code can set bytes that
// are not UTF-8; JVM class and method names may hold spaces too. A raw
// line break in one name used to cost the whole log-rt. So the text
// formats (log-rt, log-gen, xtree, xarc, xprof) write every name through
// EscapeName and their readers undo it with UnescapeName; in memory (a
// Profile, an Event, pprof) names are always the real bytes.
//
// The escaping, as in Go string literals:
//
//	\\      a backslash
//	\n      line feed
//	\r      carriage return
//	\t      tab
//	\xHH    any other byte: a space, a control byte, a byte of an invalid
//	        UTF-8 sequence, or each byte of a character that is not
//	        printable (U+0085, U+2028, no-break space, ...)
//
// Printable ASCII other than the backslash and valid UTF-8 printable
// characters stay as they are, so ordinary names are unchanged
// ("J:a.b(Ljava/lang/String;)V", "0000b718_Reference Handler", the '/'
// and '+' of hidden and lambda classes, non-ASCII letters). Spaces inside
// a name stay too, as JProf wrote them: every format puts a name where
// it runs to the end of the line, except the method name of a log-gen
// line, which is written as a token ([AppendEscapedToken]: its spaces
// escaped too). A space that starts or ends a name is always escaped.
//
// Notes (free header text) use the same escaping as names.

// EscapeName returns name in the form the text formats write it.
func EscapeName(name string) string {
	if plainName(name, true) {
		return name
	}
	return string(appendEscaped(make([]byte, 0, len(name)+16), name, true))
}

// AppendEscapedName appends EscapeName(name) to dst.
func AppendEscapedName(dst []byte, name string) []byte {
	if plainName(name, true) {
		return append(dst, name...)
	}
	return appendEscaped(dst, name, true)
}

// AppendEscapedToken appends name escaped as one token: with its spaces
// escaped too, for a field that other fields follow.
func AppendEscapedToken(dst []byte, name string) []byte {
	if plainName(name, false) {
		return append(dst, name...)
	}
	return appendEscaped(dst, name, false)
}

// escapeNote escapes a note as a name.
func escapeNote(s string) string { return EscapeName(s) }

// plainName reports whether s needs no escaping: the fast path, taken by
// nearly every name.
func plainName(s string, keepSpace bool) bool {
	if keepSpace && len(s) > 0 && (s[0] == ' ' || s[len(s)-1] == ' ') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			return false
		case c == ' ':
			if !keepSpace {
				return false
			}
		case c < ' ' || c == 0x7f:
			return false
		case c >= utf8.RuneSelf:
			return plainUTF8(s[i:], keepSpace)
		}
	}
	return true
}

// plainUTF8 is plainName's slow path, from the first non-ASCII byte on.
func plainUTF8(s string, keepSpace bool) bool {
	for _, r := range s {
		switch {
		case r == ' ':
			if !keepSpace {
				return false
			}
		case r == utf8.RuneError || r == '\\' || !unicode.IsPrint(r):
			return false
		}
	}
	return true
}

func appendEscaped(dst []byte, s string, keepSpace bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\\':
				dst = append(dst, '\\', '\\')
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == ' ' && keepSpace && i > 0 && i < len(s)-1:
				dst = append(dst, ' ')
			case c <= ' ' || c == 0x7f:
				dst = appendHexByte(dst, c)
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			// An invalid byte (size 1), or a character some tools
			// take for a line break or a blank: byte by byte.
			for j := range size {
				dst = appendHexByte(dst, s[i+j])
			}
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

func appendHexByte(dst []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	return append(dst, '\\', 'x', hex[c>>4], hex[c&15])
}

// UnescapeName undoes EscapeName. A backslash not followed by one of the
// sequences EscapeName writes is an error, so that a damaged or foreign
// name is reported rather than read as another name.
func UnescapeName(s string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	b, err := unescape(make([]byte, 0, len(s)), s)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// unescapeBytes is UnescapeName for the readers' []byte lines: it returns
// b itself when there is nothing to undo, without allocating.
func unescapeBytes(b []byte) ([]byte, error) {
	for _, c := range b {
		if c == '\\' {
			return unescape(make([]byte, 0, len(b)), string(b))
		}
	}
	return b, nil
}

func unescape(dst []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		if i+1 == len(s) {
			return nil, fmt.Errorf("name %q ends in a lone backslash", s)
		}
		i++
		switch s[i] {
		case '\\':
			dst = append(dst, '\\')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'x':
			hi, ok1 := unhex(s, i+1)
			lo, ok2 := unhex(s, i+2)
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("name %q: \\x must be followed by two hex digits", s)
			}
			dst = append(dst, hi<<4|lo)
			i += 2
		default:
			return nil, fmt.Errorf("name %q: unknown escape \\%c", s, s[i])
		}
	}
	return dst, nil
}

func unhex(s string, i int) (byte, bool) {
	if i >= len(s) {
		return 0, false
	}
	switch c := s[i]; {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// FallbackMark ends the root name of a thread whose PTT reads did not use
// the process's backend (backend is what they used: "perf" when the eBPF
// work area had no slot for it, "clock" when perf was refused too): its
// calibrated values are less comparable with the other threads', and the
// mark goes wherever its tree shows.
func FallbackMark(backend string) string { return " [PTT " + backend + "]" }

// RootName is the name of a thread's root in log-rt and log-gen: the
// thread id in hex, then the thread's name, as JProf wrote it
// ("0000b718_main").
func RootName(tid int, name string) string { return fmt.Sprintf("%08x_%s", tid, name) }
