package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/feature/sendfile"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// A file row goes out through the platform's upload, its text the
// caption.
func TestFileRowIsUploadedWithItsCaption(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: laneA, Platform: "test", Kind: "api", ChatID: "a",
		OutKind: store.OutboxFile, Text: "the report", FilePath: "/state/files/a/out/report.pdf", FileName: "report.pdf"})
	h.g.out.DeliverDue(ctx)
	got := <-h.p.out
	if got.Kind != OutFile || got.Text != "the report" || got.File == nil || got.File.Name != "report.pdf" {
		t.Errorf("delivered %s %q (file %+v), want report.pdf uploaded with its caption", got.Kind, got.Text, got.File)
	}
}

// send_file asks a lane that has no turn running (or no files store) is
// refused with a reason the agent can read.
func TestToolCallRefusedWithoutARunningTurn(t *testing.T) {
	h := newHarness(t)
	args, _ := json.Marshal(map[string]string{"path": "x.txt"})
	tests := []struct {
		name string
		call codex.ToolCall
	}{
		{name: "unknown thread", call: codex.ToolCall{ThreadID: "nobody", Tool: sendfile.Tool, Arguments: args}},
		{name: "unknown tool", call: codex.ToolCall{ThreadID: "nobody", Tool: "other", Arguments: args}},
		{name: "bad arguments", call: codex.ToolCall{ThreadID: "nobody", Tool: sendfile.Tool, Arguments: json.RawMessage(`[1]`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := h.g.ToolCall(context.Background(), tt.call)
			if res.Success || res.Text == "" {
				t.Errorf("ToolCall = %+v, want a refusal with a reason", res)
			}
		})
	}
}

// The tool is offered only with a files store.
func TestSendFileToolRegisteredWithFilesOnly(t *testing.T) {
	h := newHarness(t)
	if tools := h.g.host.threadConfig(store.Lane{}, "/w", h.g.cfg.Thread).DynamicTools; len(tools) != 0 {
		t.Errorf("without files: tools %v, want none", tools)
	}
}

// A file the agent sent is held in the files store while its turn runs, so
// a prune for the lane's quota (a message arriving meanwhile) cannot take
// it before its outbox row is committed; once the turn is over the hold is
// lifted and the quota may take the copy (its delivered row no longer
// needs it).
func TestSentFileHeldUntilTheTurnEnds(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := files.New(filepath.Join(root, "files"), files.Limits{}, nil)
	h := newHarness(t, func(c *Config) {
		c.Files = fs
		c.Thread.Cwd = work
	})
	sent := make(chan codex.ToolResult, 1)
	finish := make(chan struct{})
	h.cx.run = func(ctx context.Context, thread, _ string, _ codex.TurnEvents) (codex.TurnResult, error) {
		args, _ := json.Marshal(map[string]string{"path": "notes.txt"})
		sent <- h.g.ToolCall(ctx, codex.ToolCall{ThreadID: thread, Tool: sendfile.Tool, Arguments: args})
		<-finish
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "Here are the notes."}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "send the notes")
	if res := <-sent; !res.Success {
		t.Fatalf("send_file refused: %s", res.Text)
	}
	var quota *files.QuotaError
	if _, err := fs.Prune(laneA, 0); !errors.As(err, &quota) || quota.Kept != 5 {
		t.Fatalf("Prune during the turn = %v, want a QuotaError keeping the 5-byte copy", err)
	}
	close(finish)
	if file := <-h.p.out; file.File == nil || file.File.Name != "notes.txt" {
		t.Fatalf("first delivery %+v, want the file", file)
	}
	<-h.p.out // the reply
	h.stop()  // the worker has ended the item
	if freed, err := fs.Prune(laneA, 0); err != nil || freed != 5 {
		t.Fatalf("Prune after the turn = %d, %v; want the copy's 5 bytes freed", freed, err)
	}
}
