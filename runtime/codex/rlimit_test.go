package codex

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// limitChild lowers soft and hard limits together, never above the hard
// limit the child already has, and always forbids core files; 0 leaves a
// limit as inherited.
func TestLimitChild(t *testing.T) {
	var own unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &own); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		opts       Options
		nproc      uint64
		fsize      uint64
		fsizeAsOwn bool
	}{
		{name: "both", opts: Options{MaxProcesses: 3000, MaxFileSize: 1 << 20}, nproc: min(3000, own.Max), fsize: 1 << 20},
		{name: "above the hard limit", opts: Options{MaxProcesses: 1 << 62}, nproc: own.Max, fsizeAsOwn: true},
		{name: "off", opts: Options{}, nproc: own.Cur, fsizeAsOwn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "30")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			pid := cmd.Process.Pid
			if err := limitChild(pid, tc.opts); err != nil {
				t.Fatal(err)
			}
			get := func(res int) unix.Rlimit {
				var l unix.Rlimit
				if err := unix.Prlimit(pid, res, nil, &l); err != nil {
					t.Fatal(err)
				}
				return l
			}
			if got := get(unix.RLIMIT_CORE); got.Cur != 0 || got.Max != 0 {
				t.Errorf("RLIMIT_CORE = %+v, want 0", got)
			}
			if got := get(unix.RLIMIT_NPROC); got.Cur != tc.nproc {
				t.Errorf("RLIMIT_NPROC = %+v, want soft %d", got, tc.nproc)
			}
			want := tc.fsize
			if tc.fsizeAsOwn {
				var l unix.Rlimit
				_ = unix.Getrlimit(unix.RLIMIT_FSIZE, &l)
				want = l.Cur
			}
			if got := get(unix.RLIMIT_FSIZE); got.Cur != want || (!tc.fsizeAsOwn && got.Max != want) {
				t.Errorf("RLIMIT_FSIZE = %+v, want %d", got, want)
			}
		})
	}
}
