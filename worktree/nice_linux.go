package worktree

import "syscall"

// lowerPriority gives the process the lowest CPU priority (nice 19); a
// failure only leaves it at the daemon's.
func lowerPriority(pid int) { _ = syscall.Setpriority(syscall.PRIO_PROCESS, pid, 19) }
