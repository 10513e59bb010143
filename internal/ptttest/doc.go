// Package ptttest holds the cgo helpers that test and measure package
// ptt from C (cgo is not allowed in _test.go files): a scripted PTT read
// over one slot, real threads that register, spin, sleep and read, and
// the read-cost measurements bench uses. It is internal so that none of
// it is linked into the shipped agent, which imports ptt only.
package ptttest
