package reroute

import (
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

var addr = chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}

// watch registers the feature and starts the watch of one turn that
// answers the platform message m1.
func watch(t *testing.T) (*exttest.Host, func(codex.Progress), func()) {
	t.Helper()
	h := exttest.NewHost(t)
	h.Register(t, New())
	ws := h.Watch(&exttest.Turn{L: &exttest.Lane{Addr: addr}}, "m1", time.Now())
	if len(ws) != 1 {
		t.Fatalf("%d watchers, want 1", len(ws))
	}
	return h, ws[0].Progress, func() { ws[0].Stop(time.Now(), nil) }
}

// TestRerouteIsOneLineBeforeTheReply: a reroute and a guardian warning
// are told once each, in one notice to the lane (the reply to the turn's
// message is its answer), when the turn ends; nothing else of codex's
// progress is.
func TestRerouteIsOneLineBeforeTheReply(t *testing.T) {
	h, progress, stop := watch(t)
	reroute := codex.Progress{Kind: codex.ProgressReroute,
		Reroute: &codex.Reroute{From: "gpt-5.3-codex", To: "gpt-5.2", Reason: "highRiskCyberActivity"}}
	progress(codex.Progress{Kind: codex.ProgressRetry, Text: "Reconnecting... 1/5"})
	progress(reroute)
	progress(reroute)
	progress(codex.Progress{Kind: codex.ProgressGuardian, Text: "Automatic approval review denied the requested action.\nmore"})
	if n := h.Notices(); len(n) != 0 {
		t.Fatalf("told %+v before the turn ended", n)
	}
	stop()
	stop()
	want := "Answered by gpt-5.2 instead of gpt-5.3-codex: the request was flagged as high-risk cyber activity.\n" +
		"Codex's guardian warned: Automatic approval review denied the requested action."
	n := h.Notices()
	if len(n) != 1 || n[0].Text != want || n[0].ReplyTo != "" || n[0].Addr != addr {
		t.Fatalf("notices %+v, want one to the lane:\n%s", n, want)
	}
}

func TestAQuietTurnSaysNothing(t *testing.T) {
	h, progress, stop := watch(t)
	progress(codex.Progress{Kind: codex.ProgressPlan})
	stop()
	if n := h.Notices(); len(n) != 0 {
		t.Errorf("a turn without reroute or warning told %+v", n)
	}
}

func TestManyWarningsAreBounded(t *testing.T) {
	h, progress, stop := watch(t)
	for i := range maxLines + 3 {
		progress(codex.Progress{Kind: codex.ProgressGuardian, Text: strings.Repeat("w", i+1)})
	}
	stop()
	n := h.Notices()
	if len(n) != 1 || strings.Count(n[0].Text, "\n") != maxLines || !strings.HasSuffix(n[0].Text, "(and more warnings)") {
		t.Errorf("notices %+v, want %d lines and a note of the rest", n, maxLines)
	}
}

func TestRerouteLine(t *testing.T) {
	tests := []struct {
		r    codex.Reroute
		want string
	}{
		{codex.Reroute{From: "a", To: "b", Reason: "highRiskCyberActivity"}, "Answered by b instead of a: the request was flagged as high-risk cyber activity."},
		{codex.Reroute{From: "a", To: "b", Reason: "someNewReason"}, "Answered by b instead of a: some new reason."},
		{codex.Reroute{To: "b"}, "Answered by b instead of the model asked for."},
	}
	for _, tc := range tests {
		if got := ext.RerouteLine(tc.r); got != tc.want {
			t.Errorf("RerouteLine(%+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}
