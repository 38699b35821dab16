package setup

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// initIsTerminal reports whether r is a terminal (a tty, not just any
// character device such as /dev/null).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// echoOff turns the terminal's echo off (the line discipline still
// delivers whole lines) and returns the function that restores it.
func echoOff(r io.Reader) (func(), error) {
	f, ok := r.(*os.File)
	if !ok {
		return nil, os.ErrInvalid
	}
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON // the caller prints the newline itself
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
