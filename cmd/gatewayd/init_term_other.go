//go:build !linux

package main

import (
	"errors"
	"io"
)

func initIsTerminal(r io.Reader) bool { return isTerminal(r) }

// echoOff is not implemented here: the token is read with echo on, and
// init says so.
func echoOff(io.Reader) (func(), error) {
	return nil, errors.New("not supported on this system")
}
