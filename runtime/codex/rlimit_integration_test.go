package codex_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// A command the real app-server runs for a confined lane inherits its
// limits: a file stops growing at MaxFileSize (the writer is killed by
// SIGXFSZ or gets EFBIG), the process limit is MaxProcesses, soft and hard
// (the command cannot raise it), and no core file is written.
func TestIntegrationCommandsRunUnderLimits(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	w := newIsoWorld(t)
	m := probeModel(t)
	// Far above 64 KiB: the limit binds the app-server's own files too, and
	// its logs database outgrows that at once (it died of SIGXFSZ).
	const fileLimit, procLimit = 8 << 20, 7777
	c := startClient(t, m, w.home, func(o *codex.Options) {
		o.Args = append(codextest.SandboxArgs(m.URL), codex.IsolationArgs(codex.CodexDir(codextest.CodexBinary(t)), true, w.denied(), nil)...)
		o.MaxFileSize, o.MaxProcesses = fileLimit, procLimit
	})
	var own unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &own); err != nil {
		t.Fatal(err)
	}
	wantProcs := min(uint64(procLimit), own.Max)

	cfg := w.confine("A")
	th, err := c.EnsureThread(ctx, "", cfg)
	if err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(w.lanes["A"].work, "big")
	cmd := fmt.Sprintf(`head -c 10000000 /dev/zero > %s; echo "HEAD=$?"; `+
		`grep -E '^Max (processes|file size|core file size) ' /proc/self/limits; `+
		`ulimit -u unlimited 2>/dev/null && echo RAISED || echo NOT-RAISED; echo PROBE-DONE`, big)
	out := runProbe(t, ctx, c, th.ThreadID, cfg, cmd)

	squeezed := strings.Join(strings.Fields(out), " ")
	info, err := os.Stat(big)
	if err != nil {
		t.Fatalf("the command wrote nothing: %v\n%s", err, out)
	}
	if info.Size() != fileLimit {
		t.Errorf("file grew to %d bytes, want it stopped at %d", info.Size(), fileLimit)
	}
	if strings.Contains(out, "HEAD=0") {
		t.Errorf("writing past the limit succeeded:\n%s", out)
	}
	for _, want := range []string{
		fmt.Sprintf("Max file size %d %d bytes", fileLimit, fileLimit),
		fmt.Sprintf("Max processes %d %d processes", wantProcs, wantProcs),
		"Max core file size 0 0 bytes",
		"NOT-RAISED",
	} {
		if !strings.Contains(squeezed, want) {
			t.Errorf("want %q in the command's output:\n%s", want, out)
		}
	}
}
