package codex

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// pipeReader reads the app-server's stdout with a raw read(2) on the
// non-blocking pipe, waiting for it through the runtime's poller as
// os.File.Read does.
//
// Why not os.File.Read: every syscall the Go runtime is told about
// (entersyscall) wakes its sysmon thread when that thread sleeps, and then
// sysmon polls every 20 µs until the process is idle again. codex writes
// a dozen lines per turn, each arriving after gatewayd went idle, so each
// was a burst of a few sysmon wake-ups, about a quarter of gatewayd's CPU
// per message on a VM where a wake-up costs tens of µs. A read of a
// non-blocking pipe never blocks, which is what a raw syscall (one the
// runtime is not told about) requires.
func pipeReader(f *os.File) io.Reader {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	return &rawPipeReader{f: f, rc: rc}
}

type rawPipeReader struct {
	f  *os.File
	rc syscall.RawConn
}

func (r *rawPipeReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			r1, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				// Drained: wait until the poller says there is more.
				return false
			}
			n, errno = int(r1), e
			return true
		}
	})
	switch {
	case err != nil:
		// The poller's error for a closed file is internal; an empty
		// os.File.Read reports it as os.File does (os.ErrClosed).
		if _, ferr := r.f.Read(nil); ferr != nil {
			return 0, ferr
		}
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: err}
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
