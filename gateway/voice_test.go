package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
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
	path := filepath.Join(b.TempDir(), "note.ogg")
	if err := os.WriteFile(path, make([]byte, 32<<10), 0o600); err != nil {
		b.Fatal(err)
	}
	v := newVoice(VoiceConfig{URL: srv.URL, Model: "whisper-1"}, nil, zap.NewNop())
	for b.Loop() {
		if text, err := v.transcribe(b.Context(), path); err != nil || text == "" {
			b.Fatalf("transcribe: %q, %v", text, err)
		}
	}
}
