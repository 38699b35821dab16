package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gatewayd/gatewayd/config"
)

// In cluster mode a node's state_dir says which process ran the node last,
// so a node restarted after a crash can take back its own leases at once
// instead of waiting them out (cluster.Node.Join). The lock, held for the
// process's life and dropped by the kernel when it dies (kill -9
// included), is what makes "the last one is dead" a fact, not a guess.
const (
	clusterLockFile = "cluster.lock"
	incarnationFile = "cluster.incarnation"
)

// nodeState is this process's hold on its state directory.
type nodeState struct {
	dir  string
	lock *os.File
}

// lockNodeState takes dir's cluster lock and returns the incarnation the
// previous holder recorded ("" if none). A lock another process holds is
// a clear error: two live processes must not share a state_dir.
func lockNodeState(dir string) (*nodeState, string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("gatewayd: cluster: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, clusterLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("gatewayd: cluster: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, "", &config.Error{Key: "state_dir",
				Msg: fmt.Sprintf("%s is in use by another running gatewayd (%s is locked)", dir, path)}
		}
		return nil, "", fmt.Errorf("gatewayd: cluster: lock %s: %w", path, err)
	}
	s := &nodeState{dir: dir, lock: f}
	b, err := os.ReadFile(filepath.Join(dir, incarnationFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		s.close()
		return nil, "", fmt.Errorf("gatewayd: cluster: %w", err)
	}
	return s, strings.TrimSpace(string(b)), nil
}

// record writes this process's incarnation for the next process on dir,
// atomically (a torn file would read as a predecessor that never was).
func (s *nodeState) record(incarnation string) error {
	tmp := filepath.Join(s.dir, incarnationFile+".tmp")
	if err := os.WriteFile(tmp, []byte(incarnation+"\n"), 0o600); err != nil {
		return fmt.Errorf("gatewayd: cluster: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, incarnationFile)); err != nil {
		return fmt.Errorf("gatewayd: cluster: %w", err)
	}
	return nil
}

func (s *nodeState) close() {
	if s != nil {
		s.lock.Close() // closing the fd drops the flock
	}
}
