package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/feature/diskquota"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// quotaHarness runs a gateway whose lanes have a 1 MiB disk quota over
// their temporary directories under tmpRoot.
func quotaHarness(t *testing.T, tmpRoot string) *harness {
	t.Helper()
	h := newHarness(t, withDiskQuota(1<<20), func(c *Config) { c.Isolation.TempRoot = tmpRoot })
	h.start(t)
	return h
}

// A turn that leaves its lane over the quota is answered, then the lane is
// told once; its next message is refused (answered with the reason, its
// row closed, no turn started) while it stays over, measured again each
// time; deleting the files lifts the refusal at the next message.
func TestDiskQuotaRefusesTurnsUntilUnder(t *testing.T) {
	root := t.TempDir()
	h := quotaHarness(t, root)
	big := filepath.Join(root, files.DirName(apiAddr("a").SessionKey()), "big")
	h.cx.run = func(_ context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		if text == "write" {
			if err := os.MkdirAll(filepath.Dir(big), 0o700); err != nil {
				return codex.TurnResult{}, err
			}
			if err := os.WriteFile(big, make([]byte, 3<<20), 0o600); err != nil {
				return codex.TurnResult{}, err
			}
		}
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "done: " + text}, nil
	}

	h.send(t, "a", "m1", "write")
	if out := h.p.replyTo(t, "m1"); out.Text != "done: write" {
		t.Fatalf("reply %q", out.Text)
	}
	notice := h.p.replyTo(t, "m1")
	if !strings.Contains(notice.Text, "over the disk quota of 1 MiB (lanes.disk_quota)") {
		t.Fatalf("notice %q does not say the lane is over its quota", notice.Text)
	}

	for _, id := range []string{"m2", "m3"} {
		h.send(t, "a", id, "more")
		if out := h.p.replyTo(t, id); !strings.HasPrefix(out.Text, "Not run: ") || !strings.Contains(out.Text, "3.0 MiB") {
			t.Errorf("%s answered %q, want the refusal", id, out.Text)
		}
	}
	if n := h.cx.turnCount(); n != 1 {
		t.Errorf("%d turns ran, want only the one before the quota", n)
	}
	if st := h.st.inboundState(2); st != store.InboundFailed {
		t.Errorf("refused row state %q, want %q", st, store.InboundFailed)
	}

	h.send(t, "a", "s1", "/status")
	if out := h.p.replyTo(t, "s1"); !strings.Contains(out.Text, "Disk: 3.0 MiB of 1 MiB (lanes.disk_quota), over") {
		t.Errorf("/status %q lacks the disk line", out.Text)
	}

	if err := os.Remove(big); err != nil {
		t.Fatal(err)
	}
	h.send(t, "a", "m4", "again")
	if out := h.p.replyTo(t, "m4"); out.Text != "done: again" {
		t.Errorf("after deleting the file: %q, want the turn's answer", out.Text)
	}
}

// withDiskQuota runs the harness with a quota of limit bytes per lane.
func withDiskQuota(limit int64) harnessOpt {
	return func(c *Config) { c.Features = append(c.Features, diskquota.New(limit)) }
}

// Another lane is not held back by one over its quota.
func TestDiskQuotaIsPerLane(t *testing.T) {
	root := t.TempDir()
	h := quotaHarness(t, root)
	dir := filepath.Join(root, files.DirName(apiAddr("a").SessionKey()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	h.send(t, "a", "m1", "hi")
	if out := h.p.replyTo(t, "m1"); !strings.HasPrefix(out.Text, "Not run: ") {
		t.Errorf("lane over its quota at its first turn answered %q", out.Text)
	}
	h.send(t, "b", "m2", "hi")
	if out := h.p.replyTo(t, "m2"); out.Text != "re: hi" {
		t.Errorf("the other lane answered %q", out.Text)
	}
}
