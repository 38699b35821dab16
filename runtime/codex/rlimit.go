package codex

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Per-command limits. Codex offers none of its own for the
// commands its agent runs (its command/exec has a timeout and an output
// cap, for commands a client runs; the app-server protocol has nothing for
// the agent's), so the kernel's are used: resource limits are inherited
// across fork and exec, and codex's sandbox (bubblewrap, seccomp) keeps
// them, so limits set on the app-server hold for every command it runs,
// in every lane. They are set on the running child with prlimit(2) before
// spawn returns, so before the client has said a word to it (initialize)
// and it can have run anything. Soft and hard limits are both lowered: a
// command cannot raise them again.
//
//   - RLIMIT_FSIZE (Options.MaxFileSize): no file grows past it; the
//     writer gets SIGXFSZ or EFBIG. It holds for the app-server's own files
//     too (rollouts, its logs), so it must stay far above them.
//   - RLIMIT_NPROC (Options.MaxProcesses): a fork or thread creation fails
//     with EAGAIN once the *user* has this many processes and threads, the
//     daemon's and every other process of the same uid included. It bounds
//     a fork bomb; it must sit well above what the user runs besides, or
//     the app-server itself cannot start a thread. It does not bind root.
//   - RLIMIT_CORE is 0: a crashing command writes no core file into a
//     lane's directory (a core of a large process is gigabytes).

// limitChild sets the limits of opts on the process pid.
func limitChild(pid int, opts Options) error {
	if err := setLimit(pid, unix.RLIMIT_CORE, 0); err != nil {
		return err
	}
	if opts.MaxFileSize > 0 {
		if err := setLimit(pid, unix.RLIMIT_FSIZE, uint64(opts.MaxFileSize)); err != nil {
			return err
		}
	}
	if opts.MaxProcesses > 0 {
		if err := setLimit(pid, unix.RLIMIT_NPROC, uint64(opts.MaxProcesses)); err != nil {
			return err
		}
	}
	return nil
}

// setLimit sets resource res of pid to v, soft and hard, or to the hard
// limit it already has when that is lower (only privilege may raise one).
func setLimit(pid, res int, v uint64) error {
	var cur unix.Rlimit
	if err := unix.Prlimit(pid, res, nil, &cur); err != nil {
		return fmt.Errorf("codex: read limit %s of the app-server: %w", limitName(res), err)
	}
	v = min(v, cur.Max)
	if err := unix.Prlimit(pid, res, &unix.Rlimit{Cur: v, Max: v}, nil); err != nil {
		return fmt.Errorf("codex: set limit %s=%d on the app-server: %w", limitName(res), v, err)
	}
	return nil
}

func limitName(res int) string {
	switch res {
	case unix.RLIMIT_CORE:
		return "RLIMIT_CORE"
	case unix.RLIMIT_FSIZE:
		return "RLIMIT_FSIZE"
	case unix.RLIMIT_NPROC:
		return "RLIMIT_NPROC"
	}
	return fmt.Sprint(res)
}
