package reports

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
)

// maxLine bounds a line; Java signatures are long but not this long.
const maxLine = 4 << 20

// lineReader counts lines so that errors can name them (log-rt and the
// text formats read line by line).
type lineReader struct {
	sc *bufio.Scanner
	n  int
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
