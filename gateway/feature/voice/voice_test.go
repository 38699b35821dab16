package voice

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
)

// BenchmarkTranscribe is one voice note (32 KB) through a fake
// /v1/audio/transcriptions on 127.0.0.1: the form, the round trip and
// the answer — the gateway's part of a transcription.
func BenchmarkTranscribe(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, _, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = io.Copy(io.Discard, f)
		_, _ = io.WriteString(w, `{"text":"please deploy the staging branch"}`)
	}))
	defer srv.Close()
	fstore := files.New(filepath.Join(b.TempDir(), "files"), files.Limits{}, nil)
	const lane = "v1:api:bench"
	saved, err := fstore.Save(b.Context(), lane, "m1", "note.ogg", bytes.NewReader(make([]byte, 32<<10)))
	if err != nil {
		b.Fatal(err)
	}
	v := New(Config{URL: srv.URL, Model: "whisper-1"})
	v.files, v.log = fstore, zap.NewNop()
	for b.Loop() {
		if text, err := v.transcribe(b.Context(), lane, saved.Path); err != nil || text == "" {
			b.Fatalf("transcribe: %q, %v", text, err)
		}
	}
}
