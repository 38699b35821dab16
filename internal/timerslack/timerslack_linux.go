// Package timerslack reads and sets the Linux timer slack of the calling
// thread: how late the kernel may fire its timers so that it can wake the
// thread once for several. A new thread, and a child process, starts with
// the slack of the thread that created it, and execve keeps it.
package timerslack

import (
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// KernelDefault is the slack every thread has unless something chose
// another (init's, inherited by everything).
const KernelDefault = 50 * time.Microsecond

const (
	prSetTimerSlack = 29 // PR_SET_TIMERSLACK
	prGetTimerSlack = 30 // PR_GET_TIMERSLACK
)

// Supported says whether this system has a timer slack to set.
const Supported = true

// Current is the calling thread's timer slack. The caller locks the
// goroutine to its thread when it must match a later Set.
func Current() (time.Duration, error) {
	ns, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return time.Duration(ns), nil
}

// Set sets the calling thread's timer slack (at least 1 ns).
func Set(d time.Duration) error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, uintptr(max(d, 1)), 0); errno != 0 {
		return errno
	}
	return nil
}

// Start starts cmd with timer slack d, as systemd's TimerSlackNSec= does:
// the child is forked from a thread locked and set to d, then put back.
func Start(cmd *exec.Cmd, d time.Duration) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, err := Current()
	if err != nil {
		return err
	}
	if err := Set(d); err != nil {
		return err
	}
	defer Set(old)
	return cmd.Start()
}
