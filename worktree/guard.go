package worktree

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// A lane's git directory is read-only to its commands (codex's sandbox
// mounts Dir/.git read-only), so what git reads there is what the daemon
// wrote. guard does not take that on trust: before every git the daemon
// runs on a lane's repository, the files through which a repository's
// owner tells git what to execute or where else to look are put back as
// the daemon wrote them — config (hooks paths, fsmonitor, filters,
// include.path, …), objects/info/alternates, and no commondir or
// config.worktree (which would move git to another repository's config).
// A lane that somehow wrote them gains nothing, and the daemon logs
// nothing it cannot explain: the caller is told what was put back.

// laneConfig is a lane repository's whole config: nothing git would run,
// nothing it would include. A sha256 project's lanes are sha256 too.
const laneConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"

const laneConfigSHA256 = "[core]\n\trepositoryformatversion = 1\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n" +
	"[extensions]\n\tobjectformat = sha256\n"

func laneConfigFor(format string) string {
	if format == "sha256" {
		return laneConfigSHA256
	}
	return laneConfig
}

// laneRepoFiles are the files guard keeps as the daemon wrote them, by
// their path in the git directory, for a repository borrowing objects.
func laneRepoFiles(objects, format string) map[string][]byte {
	return map[string][]byte{
		"config":                  []byte(laneConfigFor(format)),
		"objects/info/alternates": []byte(objects + "\n"),
	}
}

// foreign are files a lane repository never has: commondir and
// config.worktree would make git read another config; grafts and shallow
// would rewrite history as git reads it; info/attributes would change how
// files are recorded.
var foreign = []string{"commondir", "config.worktree", "gitdir", "shallow", "info/grafts", "info/attributes"}

// repair puts the lane repository's trusted files back as the daemon
// wrote them and removes foreign ones; it returns what it changed.
func repair(gitDir, objects, format string) (changed []string, err error) {
	root, err := os.OpenRoot(gitDir)
	if err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	defer root.Close()
	for name, want := range laneRepoFiles(objects, format) {
		if regularWith(root, name, want) {
			continue
		}
		changed = append(changed, name)
		// A link or a directory there is removed, not followed.
		if err := root.RemoveAll(name); err != nil {
			return changed, fmt.Errorf("worktree: %w", err)
		}
		if err := root.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			return changed, fmt.Errorf("worktree: %w", err)
		}
		if err := writeNew(root, name, want); err != nil {
			return changed, err
		}
	}
	for _, name := range foreign {
		if _, err := root.Lstat(name); err == nil {
			changed = append(changed, name)
			if err := root.RemoveAll(name); err != nil {
				return changed, fmt.Errorf("worktree: %w", err)
			}
		}
	}
	return changed, nil
}

// regularWith reports whether name is a regular file (not a link) holding
// exactly want.
func regularWith(root *os.Root, name string, want []byte) bool {
	fi, err := root.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(want)) {
		return false
	}
	got, err := root.ReadFile(name)
	return err == nil && bytes.Equal(got, want)
}

// writeNew creates name, which must not exist, with data: O_EXCL refuses
// a link planted between the removal and the write.
func writeNew(root *os.Root, name string, data []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// Repair puts t's repository back as the daemon wrote it and says what
// it changed. Every function here that runs git on a lane's repository
// repairs it first; the gateway also calls it before each turn's
// snapshot to log what it finds: anything means the lane's commands wrote
// its git directory, which codex's sandbox should have kept read-only.
func Repair(t Tree) (changed []string, err error) { return repair(t.GitDir, t.Objects(), t.Format) }

// git is t's repository, repaired, to run git on.
func (t Tree) git() (repoDirs, error) {
	if _, err := Repair(t); err != nil {
		return repoDirs{}, err
	}
	return t.dirs(), nil
}
