package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/sendfile"
	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// sendFileModel scripts the fake model: "send PATH" calls send_file with
// PATH; the follow-up echoes the tool output (DefaultReply).
func sendFileModel(w *world) {
	w.model.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.HasPrefix(req.LastUserText(), "send ") {
			path := strings.TrimPrefix(req.LastUserText(), "send ")
			return codextest.Reply{ToolCall: codextest.SendFile("call_"+filepath.Base(path), path, "here: "+filepath.Base(path))}
		}
		return codextest.DefaultReply(req)
	})
}

// getFile fetches a file URL of the API lane.
func (in *instance) getFile(t *testing.T, url string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+in.api.Addr()+url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// toolOutputs are the send_file outputs the model received, in order.
func toolOutputs(m *codextest.Model) []string {
	var out []string
	for _, r := range m.Requests() {
		if o, ok := r.ToolOutput(); ok {
			out = append(out, o)
		}
	}
	return out
}

const maxTestFile = 256

func startSendFile(t *testing.T) (*world, *instance) {
	t.Helper()
	w := newWorld(t)
	sendFileModel(w)
	root := filepath.Join(w.dir, "state", "files")
	in := w.start(t, gateway.Config{Files: files.New(root, files.Limits{MaxBytes: maxTestFile}, nil)})
	return w, in
}

// The agent sends a file of the project directory with send_file: the API
// answer carries it and GET .../files/{id} serves the bytes as they were
// when the tool was called, not as later edited.
func TestSendFileAPIAnswerCarriesFile(t *testing.T) {
	w, in := startSendFile(t)
	report := []byte("quarterly numbers: 1, 2, 3\n")
	if err := os.WriteFile(filepath.Join(w.dir, "report.txt"), report, 0o600); err != nil {
		t.Fatal(err)
	}
	resp := in.ask(t, "out", "send report.txt")
	if resp.Status != "completed" {
		t.Fatalf("answer = %+v, want completed", resp)
	}
	if len(resp.Files) != 1 || resp.Files[0].Name != "report.txt" || resp.Files[0].Size != int64(len(report)) {
		t.Fatalf("answer files = %+v, want report.txt of %d bytes", resp.Files, len(report))
	}
	if reqs := w.model.Requests(); len(reqs) == 0 || !slices.Contains(reqs[0].ToolNames(), sendfile.Tool) {
		t.Errorf("the model was not offered send_file")
	}
	if outs := toolOutputs(w.model); len(outs) != 1 || !strings.Contains(outs[0], "report.txt") || !strings.Contains(outs[0], "will be sent") {
		t.Errorf("tool outputs = %q, want one saying report.txt will be sent", outs)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "report.txt"), []byte("edited later"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, body := in.getFile(t, resp.Files[0].URL)
	if code != http.StatusOK || !bytes.Equal(body, report) {
		t.Fatalf("GET %s = %d %q, want 200 %q", resp.Files[0].URL, code, body, report)
	}
	if code, _ := in.getFile(t, "/api/lanes/out/files/..%2fgatewayd.db"); code != http.StatusNotFound {
		t.Errorf("GET of a path out of the out directory = %d, want 404", code)
	}
	if code, _ := in.getFile(t, "/api/lanes/other/files/report.txt"); code != http.StatusNotFound {
		t.Errorf("GET of another lane's file = %d, want 404", code)
	}
	// The lane's agent replaces its out/ with a link to a directory
	// outside the lane holding a file of the same name: it is
	// not served.
	outDir := filepath.Join(w.dir, "state", "files", files.DirName("v1:api:out"), "out")
	victim := t.TempDir()
	if err := os.WriteFile(filepath.Join(victim, filepath.Base(resp.Files[0].URL)), []byte("VICTIM"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(outDir, outDir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, outDir); err != nil {
		t.Fatal(err)
	}
	if code, body := in.getFile(t, resp.Files[0].URL); code != http.StatusNotFound {
		t.Errorf("GET through a linked out/ = %d %q, want 404", code, body)
	}
}

// The SSE stream carries the file as a "file" event before "done".
func TestSendFileAPIStreamFileEvent(t *testing.T) {
	w, in := startSendFile(t)
	if err := os.WriteFile(filepath.Join(w.dir, "notes.md"), []byte("# notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []api.FileRef
	done, err := in.stream("sse", "send notes.md", func(event, data string) {
		if event == "file" {
			var f api.FileRef
			if err := json.Unmarshal([]byte(data), &f); err != nil {
				t.Errorf("file event %q: %v", data, err)
			}
			got = append(got, f)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "notes.md" || got[0].Size != 8 || !strings.HasPrefix(got[0].URL, "/api/lanes/sse/files/") {
		t.Fatalf("file events = %+v, want notes.md", got)
	}
	if len(done.Files) != 1 {
		t.Errorf("done event files = %+v, want the file", done.Files)
	}
	if code, body := in.getFile(t, got[0].URL); code != http.StatusOK || string(body) != "# notes\n" {
		t.Errorf("GET %s = %d %q", got[0].URL, code, body)
	}
}

// Paths out of the project, symlinks out of it and files over
// files.max_bytes are refused; the model reads the reason as the tool's
// output and nothing is sent.
func TestSendFileRefusals(t *testing.T) {
	w, in := startSendFile(t)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(w.dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "big.bin"), bytes.Repeat([]byte("x"), maxTestFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(w.dir, "adir"), 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, wantReason string
	}{
		{name: "parent escape", path: "../../etc/passwd", wantReason: "outside the project directory"},
		{name: "symlink out", path: "link.txt", wantReason: "outside the project directory"},
		{name: "too large", path: "big.bin", wantReason: "larger than " + files.FormatSize(maxTestFile)},
		{name: "directory", path: "adir", wantReason: "not a regular file"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := in.ask(t, "refuse", "send "+tt.path)
			if resp.Status != "completed" || len(resp.Files) != 0 {
				t.Fatalf("answer = %+v, want completed without files", resp)
			}
			outs := toolOutputs(w.model)
			if len(outs) != i+1 {
				t.Fatalf("tool outputs = %q, want %d", outs, i+1)
			}
			if got := outs[i]; !strings.Contains(got, "send_file refused: "+tt.wantReason) {
				t.Errorf("tool output = %q, want the reason %q", got, tt.wantReason)
			}
			if strings.Contains(outs[i], "secret") {
				t.Errorf("tool output %q reveals the target", outs[i])
			}
		})
	}
}
