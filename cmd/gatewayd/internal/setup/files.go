package setup

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// write writes the environment file, then the config, each atomically.
func (c *initCmd) write(cfgPath, envPath, yaml string, st *initState) error {
	group := serviceGroup()
	var env strings.Builder
	env.WriteString("# gatewayd secrets, written by `gatewayd init`; systemd reads it (EnvironmentFile=).\n")
	for _, v := range tokenEnv(st) {
		fmt.Fprintf(&env, "%s=%s\n", v[0], v[1])
	}
	envMode := os.FileMode(0o600)
	if group >= 0 {
		envMode = 0o640
	}
	if err := writeFileAtomic(envPath, []byte(env.String()), envMode, group); err != nil {
		return fmt.Errorf("init: write %s: %w", envPath, errorCause(err))
	}
	if err := writeFileAtomic(cfgPath, []byte(yaml), 0o640, group); err != nil {
		return fmt.Errorf("init: write %s: %w", cfgPath, errorCause(err))
	}
	fmt.Fprintf(c.std.Out, "Wrote %s (mode 0640) and %s (mode %04o; the token(s)).\n", cfgPath, envPath, envMode)
	return nil
}

// serviceGroup is the gatewayd group's id when init runs as root and the
// group exists (the service user then reads both files), else -1.
func serviceGroup() int {
	if os.Geteuid() != 0 {
		return -1
	}
	g, err := user.LookupGroup("gatewayd")
	if err != nil {
		return -1
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return -1
	}
	return gid
}

func writeFileAtomic(path string, data []byte, mode os.FileMode, gid int) error {
	dir := filepath.Dir(path)
	dirMode := os.FileMode(0o755)
	if gid >= 0 {
		dirMode = 0o750
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return err
		}
		if gid >= 0 {
			if err := os.Chown(dir, -1, gid); err != nil {
				return err
			}
		}
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if gid >= 0 {
		if err := f.Chown(-1, gid); err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
