//go:build !linux

package worktree

// lowerPriority is a no-op where the daemon does not run in production.
func lowerPriority(int) {}
