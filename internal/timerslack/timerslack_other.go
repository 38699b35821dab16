//go:build !linux

package timerslack

import (
	"errors"
	"os/exec"
	"time"
)

// KernelDefault is Linux's default slack; elsewhere nothing has one.
const KernelDefault = 50 * time.Microsecond

// Supported says whether this system has a timer slack to set.
const Supported = false

var errUnsupported = errors.New("timerslack: not supported on this system")

// Current fails: only Linux has a per-thread timer slack.
func Current() (time.Duration, error) { return 0, errUnsupported }

// Set fails: only Linux has a per-thread timer slack.
func Set(time.Duration) error { return errUnsupported }

// Start starts cmd unchanged.
func Start(cmd *exec.Cmd, _ time.Duration) error { return cmd.Start() }
