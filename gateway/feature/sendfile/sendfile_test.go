package sendfile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

const laneA = "v1:test:a"

// Images codex generated (imageGeneration items with a saved path) are
// snapshotted into the lane's out directory like send_file's files.
func TestGeneratedImagesAreSnapshotted(t *testing.T) {
	root := t.TempDir()
	fs := files.New(filepath.Join(root, "files"), files.Limits{}, nil)
	s := &Files{files: fs, log: zap.NewNop()}
	img := filepath.Join(root, "generated", "ig_1.png")
	if err := os.MkdirAll(filepath.Dir(img), 0o700); err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n0000")
	if err := os.WriteFile(img, png, 0o600); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"type": "imageGeneration", "id": "ig_1", "savedPath": img})
	items := []codex.Item{{Type: codex.ItemAgentMessage, Text: "hi"}, {Type: codex.ItemImageGeneration, ID: "ig_1", Raw: raw},
		{Type: codex.ItemImageGeneration, ID: "ig_2", Raw: json.RawMessage(`{"savedPath":null}`)}}
	got := s.generatedImages(laneA, items)
	if len(got) != 1 {
		t.Fatalf("rows = %+v, want one", got)
	}
	f := got[0]
	if f.OutKind != store.OutboxFile || f.FileName != "ig_1.png" || f.FileMIME != "image/png" ||
		filepath.Dir(f.FilePath) != fs.OutDir(laneA) {
		t.Errorf("row = %+v, want ig_1.png as image/png under %s", f, fs.OutDir(laneA))
	}
}
