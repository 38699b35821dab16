package gatewaytest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// LinkAttack is a hostile lane's agent: the commands it runs
// replace what the daemon writes and uploads in the lane's files
// directory with links to a secret outside every lane, and the test checks
// that the daemon neither wrote there nor uploaded it.
type LinkAttack struct {
	FilesRoot string // the files store's root, holding each lane's directory
	Victim    string // a directory outside every lane
	Secret    string // a file in Victim
	Data      []byte // Secret's bytes
}

// The messages that start each attack, and the files they send from the
// lane's working directory (WriteFiles puts them there).
const (
	// SwapOutMarker: send_file first.txt (which makes out/), run a command
	// that replaces every lane's out/ with a link to Victim, then
	// send_file chart.txt, whose copy must not land in Victim.
	SwapOutMarker = "swap out"
	// SwapCopyMarker: send_file chart.txt, then run a command that swaps
	// its copy in out/ for a link to Secret before the upload.
	SwapCopyMarker = "swap copy"
	FirstFile      = "first.txt"
	ChartFile      = "chart.txt"
)

// NewLinkAttack makes the victim directory and its secret.
func NewLinkAttack(t testing.TB, filesRoot string) LinkAttack {
	t.Helper()
	a := LinkAttack{FilesRoot: filesRoot, Victim: t.TempDir(), Data: []byte("VICTIM-SECRET-BYTES")}
	a.Secret = filepath.Join(a.Victim, "secret.txt")
	if err := os.WriteFile(a.Secret, a.Data, 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

// WriteFiles puts the files the attacks send in dir (the lane's working
// directory).
func (a LinkAttack) WriteFiles(t testing.TB, dir string) {
	t.Helper()
	for _, name := range []string{FirstFile, ChartFile} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("contents of "+name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// Model scripts the agent: each step is chosen by the last tool's output,
// so the calls run in order within one turn.
func (a LinkAttack) Model(req codextest.Request) codextest.Reply {
	out, followUp := req.ToolOutput()
	switch {
	case !followUp && strings.Contains(req.LastUserText(), SwapOutMarker):
		return codextest.Reply{ToolCall: codextest.SendFile("call_first", FirstFile, "")}
	case !followUp && strings.Contains(req.LastUserText(), SwapCopyMarker):
		return codextest.Reply{ToolCall: codextest.SendFile("call_chart", ChartFile, "")}
	case strings.Contains(out, "SWAPPED-OUT"):
		return codextest.Reply{ToolCall: codextest.SendFile("call_chart", ChartFile, "")}
	case strings.Contains(out, "SWAPPED-COPY"):
		return codextest.DefaultReply(req)
	case strings.Contains(out, FirstFile+" (") && strings.Contains(out, "will be sent"):
		return codextest.Reply{ToolCall: codextest.ExecCommand("call_swap_out", a.swapOut())}
	case strings.Contains(out, ChartFile+" (") && strings.Contains(out, "will be sent") &&
		strings.Contains(req.InputText(), SwapCopyMarker):
		return codextest.Reply{ToolCall: codextest.ExecCommand("call_swap_copy", a.swapCopy())}
	}
	return codextest.DefaultReply(req)
}

// swapOut replaces every lane's out/ with a link to Victim. It moves
// rather than removes: codex refuses rm -rf commands. The marker is
// printed only by a swap that happened (codex's refusals quote the
// command).
func (a LinkAttack) swapOut() string {
	return "for d in " + quote(a.FilesRoot) + "/*/out; do mv \"$d\" \"$d.old\" && ln -s " + quote(a.Victim) +
		" \"$d\" && echo SWAPPED-$(echo OUT); done"
}

// swapCopy replaces every lane's copy of chart.txt with a link to Secret.
func (a LinkAttack) swapCopy() string {
	return "for f in " + quote(a.FilesRoot) + "/*/out/" + ChartFile + "; do mv \"$f\" \"$f.old\" && ln -s " + quote(a.Secret) +
		" \"$f\" && echo SWAPPED-$(echo COPY); done"
}

// Finished reports whether text is the agent's whole last reply: the
// last tool's output to its end (a streamed preview may show part of it).
func (LinkAttack) Finished(text string) bool {
	if !strings.Contains(text, "TOOL OUTPUT") {
		return false
	}
	for _, end := range []string{"Nothing was sent.", "with your reply.", "SWAPPED-COPY"} {
		if strings.HasSuffix(strings.TrimSpace(text), end) {
			return true
		}
	}
	return false
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// CheckVictim fails the test if anything was written into Victim (only
// the secret is there) or any of uploads carries the secret's bytes.
func (a LinkAttack) CheckVictim(t testing.TB, uploads [][]byte) {
	t.Helper()
	entries, err := os.ReadDir(a.Victim)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the daemon wrote through a link: the victim directory holds %q, want only secret.txt", names)
	}
	for _, u := range uploads {
		if bytes.Contains(u, a.Data) {
			t.Errorf("the daemon uploaded the secret behind a link")
		}
	}
}
