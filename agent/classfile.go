package main

import (
	"encoding/binary"
	"errors"
)

// classMethodNames reads the names of the methods a class file declares
// (the JVM specification's class file format, chapter 4).
func classMethodNames(b []byte) ([]string, error) {
	bad := errors.New("not a class file")
	pos := 0
	u2 := func() (int, error) {
		if pos+2 > len(b) {
			return 0, bad
		}
		v := int(binary.BigEndian.Uint16(b[pos:]))
		pos += 2
		return v, nil
	}
	if len(b) < 10 || binary.BigEndian.Uint32(b) != 0xCAFEBABE {
		return nil, bad
	}
	pos = 8
	n, err := u2()
	if err != nil {
		return nil, err
	}
	utf8s := make(map[int]string)
	for i := 1; i < n; i++ {
		if pos >= len(b) {
			return nil, bad
		}
		tag := b[pos]
		pos++
		switch tag {
		case 1:
			l, err := u2()
			if err != nil || pos+l > len(b) {
				return nil, bad
			}
			utf8s[i] = string(b[pos : pos+l])
			pos += l
		case 3, 4, 9, 10, 11, 12, 17, 18:
			pos += 4
		case 5, 6:
			pos += 8
			i++
		case 7, 8, 16, 19, 20:
			pos += 2
		case 15:
			pos += 3
		default:
			return nil, bad
		}
	}
	pos += 6 // access, this, super
	ni, err := u2()
	if err != nil {
		return nil, err
	}
	pos += 2 * ni
	members := func(keep bool) ([]string, error) {
		cnt, err := u2()
		if err != nil {
			return nil, err
		}
		var names []string
		for ; cnt > 0; cnt-- {
			pos += 2
			name, err := u2()
			if err != nil {
				return nil, err
			}
			pos += 2
			na, err := u2()
			if err != nil {
				return nil, err
			}
			for ; na > 0; na-- {
				pos += 2
				if pos+4 > len(b) {
					return nil, bad
				}
				pos += 4 + int(binary.BigEndian.Uint32(b[pos:]))
			}
			if keep {
				names = append(names, utf8s[name])
			}
		}
		return names, nil
	}
	if _, err := members(false); err != nil {
		return nil, err
	}
	return members(true)
}
