package reports

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxLine bounds a line; Java signatures are long but not this long.
const maxLine = 4 << 20

// lineReader counts lines so that errors can name them (log-rt and the
// text formats read line by line).
type lineReader struct {
	sc *bufio.Scanner
	n  int
	// cut: the input's last line has no newline (the file was cut in
	// the middle of it): an error there says the file is truncated.
	cut bool
}

// newLineReader reads r's lines, noting a last line cut short.
func newLineReader(r io.Reader) *lineReader {
	lr := &lineReader{sc: bufio.NewScanner(r)}
	lr.sc.Buffer(make([]byte, 64<<10), maxLine)
	lr.sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		if atEOF && tok != nil && adv == len(data) && data[len(data)-1] != '\n' {
			lr.cut = true
		}
		return adv, tok, err
	})
	return lr
}

// lineError names the line of err, and says so when that line is the
// last, cut short (cut is set once that line is read, and reading stops
// at the error).
func (lr *lineReader) lineError(what string, err error) error {
	if lr.cut {
		return fmt.Errorf("%s line %d: truncated: the file ends in the middle of this line (%w)", what, lr.n, err)
	}
	return fmt.Errorf("%s line %d: %w", what, lr.n, err)
}

var errEOF = errors.New("unexpected end of file")

// next returns the next line, or an error saying what was expected when
// the input ends.
func (lr *lineReader) next(expected string) ([]byte, error) {
	lr.n++
	if !lr.sc.Scan() {
		if err := lr.sc.Err(); err != nil {
			return nil, err
		}
		if lr.n == 1 {
			return nil, fmt.Errorf("empty file, expected %s", expected)
		}
		return nil, fmt.Errorf("%w, expected %s", errEOF, expected)
	}
	return lr.sc.Bytes(), nil
}

func (lr *lineReader) expect(want string) error {
	line, err := lr.next(strconv.Quote(want))
	if err != nil {
		return err
	}
	if string(line) != want {
		return fmt.Errorf("expected %q, got %q", want, line)
	}
	return nil
}
