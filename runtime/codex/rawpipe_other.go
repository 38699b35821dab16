//go:build !linux

package codex

import (
	"io"
	"os"
)

// pipeReader is the file itself where the raw read of rawpipe_linux.go is
// not available.
func pipeReader(f *os.File) io.Reader { return f }
