package pgtest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Freeze stops the server as a machine that stops answering does: SIGSTOP
// to the postmaster and every process it started. Connections stay open
// and new ones are accepted by the kernel, but nothing is answered until
// Thaw. Give the test its own server (Start): a frozen shared one would
// stall every other test using it.
func (s *Server) Freeze() error {
	pm := s.cmd.Process.Pid
	// The postmaster first, so it forks no backend the scan below misses.
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pgtest: freeze postmaster %d: %w", pm, err)
	}
	kids, err := childrenOf(pm)
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range kids {
		// A backend that exited since the scan is no error.
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("pgtest: freeze %d: %w", pid, err))
		}
	}
	s.frozen = kids
	return errors.Join(errs...)
}

// Thaw lets a frozen server go on: SIGCONT to every process Freeze
// stopped, the postmaster last.
func (s *Server) Thaw() error {
	var errs []error
	for _, pid := range append(s.frozen, s.cmd.Process.Pid) {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("pgtest: thaw %d: %w", pid, err))
		}
	}
	s.frozen = nil
	return errors.Join(errs...)
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("pgtest: list processes: %w", err)
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// its closing parenthesis.
		rest := string(stat)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) >= 2 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out, nil
}
