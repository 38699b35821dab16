package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/voice"
)

// oggNote starts as an Ogg stream does, so the files store sees audio.
var oggNote = append([]byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00"), bytes.Repeat([]byte{0x5a}, 48)...)

// fakeTranscriber is an OpenAI-compatible /v1/audio/transcriptions on
// 127.0.0.1: it checks the request's key, model and file, and answers
// with reply (a status and a body); hang makes it answer only when the
// client gives up.
func fakeTranscriber(t *testing.T, status int, body string, hang bool) *httptest.Server {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang {
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		if r.Header.Get("Authorization") != "Bearer sk-voice-SECRET" || r.FormValue("model") != "whisper-test" {
			http.Error(w, "bad key or model", http.StatusUnauthorized)
			return
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			http.Error(w, "no file", http.StatusBadRequest)
			return
		}
		audio, _ := io.ReadAll(f)
		if !bytes.Equal(audio, oggNote) {
			http.Error(w, "not the voice note", http.StatusBadRequest)
			return
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // runs first: a hung handler lets Close return
	return srv
}

// TestIntegrationVoiceNotesAreTranscribed: with voice.transcribe_url a
// voice note's transcript is in the turn's text and shown back in one
// line; a server that answers 500, or hangs past voice.timeout, is told
// and the audio still goes to Codex as a file. The key never shows.
func TestIntegrationVoiceNotesAreTranscribed(t *testing.T) {
	for _, tc := range []struct {
		name, want, notice string
		status             int
		body               string
		hang               bool
	}{
		{name: "transcribed", status: 200, body: `{"text":"please deploy the staging branch"}`,
			want: "🎙 Transcript of note.ogg: please deploy the staging branch", notice: "🎙 please deploy the staging branch"},
		{name: "server error", status: 500, body: `{"error":"model overloaded"}`,
			notice: "Could not transcribe note.ogg (voice: the transcription server answered 500 Internal Server Error"},
		{name: "hung server", hang: true, notice: "no transcript within 300ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeTranscriber(t, tc.status, tc.body, tc.hang)
			w := newWorld(t)
			root := filepath.Join(w.dir, "state", "files")
			w.features.Voice = voice.Config{URL: srv.URL + "/v1/audio/transcriptions", APIKey: "sk-voice-SECRET",
				Model: "whisper-test", Timeout: 300 * time.Millisecond}
			gw := w.start(t, gateway.Config{Files: files.New(root, files.Limits{}, nil)})
			code, resp := gw.askMultipart(t, "voice", "", upload{"note.ogg", "audio/ogg", oggNote})
			if code != http.StatusOK || resp.Status != "completed" {
				t.Fatalf("answer %d %+v", code, resp)
			}
			req := w.model.Requests()[len(w.model.Requests())-1]
			text := req.LastUserText()
			if tc.want != "" && !strings.Contains(text, tc.want) {
				t.Errorf("the turn's text %q lacks the transcript", text)
			}
			if !strings.Contains(text, "note.ogg") {
				t.Errorf("the turn's text %q does not name the audio file", text)
			}
			notices := strings.Join(resp.Notices, "\n")
			if !strings.Contains(notices, tc.notice) {
				t.Errorf("notices %q, want %q", notices, tc.notice)
			}
			if strings.Contains(notices+text, "SECRET") {
				t.Error("the API key leaked into the lane")
			}
			if strings.Contains(notices, "not transcribed") {
				t.Error("with a transcriber the lane is still told audio is not transcribed")
			}
		})
	}
}
