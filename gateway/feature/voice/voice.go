// Package voice is voice.*: voice notes and audio files transcribed before
// their turn.
package voice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// Voice (voice.*): Codex cannot hear. With a transcription
// endpoint configured (OpenAI's /v1/audio/transcriptions or a compatible
// local whisper server) each voice note or audio file of a message is
// transcribed before its turn and the transcript becomes part of the
// turn's text, shown back to the lane in one line. A transcription that
// fails or takes too long is told, and the audio still goes as a file.

// Config is the transcription endpoint (voice.*).
type Config struct {
	URL     string        // voice.transcribe_url; "" = off
	APIKey  string        // bearer token; "" sends none
	Model   string        // voice.model
	Timeout time.Duration // one transcription
}

// voiceShownMax bounds the transcript's echo in the lane.
const voiceShownMax = 200

// Voice transcribes the audio of a turn's message into its text.
type Voice struct {
	cfg    Config
	files  *files.Store // where the audio is stored (nil: none is)
	client *http.Client
	host   ext.Host
	log    *zap.Logger
}

// New transcribes with the endpoint of cfg (off without a URL).
func New(cfg Config) *Voice {
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	return &Voice{cfg: cfg, client: &http.Client{}}
}

// Name is the feature's name.
func (v *Voice) Name() string { return "voice" }

func (v *Voice) on() bool { return v.cfg.URL != "" }

// Register transcribes each audio file before its turn, when an endpoint
// is configured.
func (v *Voice) Register(h ext.Host) error {
	v.host, v.log, v.files = h, h.Logger(), h.Files()
	if v.on() {
		h.OnAudio(v.transcript)
	}
	return nil
}

// transcript is what the audio at path adds to the turn's text: its
// transcript, also shown back to the lane; nothing when it could not be
// transcribed, and the lane is told.
func (v *Voice) transcript(ctx context.Context, l ext.Lane, path string) string {
	name := filepath.Base(path)
	started := time.Now()
	text, err := v.transcribe(ctx, l.Key(), path)
	if err != nil {
		v.log.Warn("voice.transcribe_failed", zap.String("lane", l.Key()), zap.String("file", name), zap.Error(err))
		// Lane notices, not answers: the message's answer is the turn's.
		v.host.Notify(ctx, l.Address(), "", "Could not transcribe "+name+" ("+ext.BriefError(err)+"); Codex gets it as a file.")
		return ""
	}
	v.log.Info("voice.transcribed", zap.String("lane", l.Key()), zap.String("file", name),
		zap.Duration("took", time.Since(started)), zap.Int("chars", len(text)))
	v.host.Notify(ctx, l.Address(), "", "🎙 "+ext.QuoteStart(text, voiceShownMax))
	return "\n\n🎙 Transcript of " + name + ": " + text
}

// transcribe posts one file as multipart (file, model) and returns the
// "text" of the JSON answer.
func (v *Voice) transcribe(ctx context.Context, lane, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, v.cfg.Timeout)
	defer cancel()
	body, contentType, err := v.transcriptionForm(lane, path)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.cfg.URL, body)
	if err != nil {
		return "", fmt.Errorf("voice: request: %w", err)
	}
	req.Header.Set("Content-Type", contentType)
	if v.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+v.cfg.APIKey)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("voice: no transcript within %s", v.cfg.Timeout)
		}
		return "", fmt.Errorf("voice: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("voice: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("voice: the transcription server answered %s: %s", resp.Status, ext.QuoteStart(string(raw), 120))
	}
	var out struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", fmt.Errorf("voice: the transcription server's answer is not JSON with a text: %w", err)
	}
	if strings.TrimSpace(out.Text) == "" {
		return "", errors.New("voice: the transcript is empty")
	}
	return strings.TrimSpace(out.Text), nil
}

// transcriptionForm is the multipart body of /v1/audio/transcriptions. The
// audio is read through the lane's directory, which its agent can write: a
// link put in the file's place does not send its target to the server.
func (v *Voice) transcriptionForm(lane, path string) (io.Reader, string, error) {
	if v.files == nil {
		return nil, "", errors.New("voice: no files store holds the audio")
	}
	model := v.cfg.Model
	f, err := v.files.Open(lane, path)
	if err != nil {
		return nil, "", fmt.Errorf("voice: %w", err)
	}
	defer f.Close()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.WriteField("model", model); err != nil {
		return nil, "", err
	}
	part, err := w.CreateFormFile("file", filepath.Base(path))
	if err != nil {
		return nil, "", err
	}
	if _, err := io.Copy(part, f); err != nil {
		return nil, "", fmt.Errorf("voice: reading %s: %w", filepath.Base(path), err)
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return &b, w.FormDataContentType(), nil
}
