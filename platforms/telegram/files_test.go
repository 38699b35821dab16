package telegram

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

// fileSink reads every attachment while Deliver runs, as the gateway does,
// and records what it read (or why it could not).
type fileSink struct {
	*fakeSink
	mu    sync.Mutex
	files map[string]string // name → bytes, or "error: …"
	meta  map[string]gateway.Attachment
}

func newFileSink() *fileSink {
	return &fileSink{fakeSink: newSink(), files: map[string]string{}, meta: map[string]gateway.Attachment{}}
}

func (s *fileSink) Deliver(ctx context.Context, in gateway.Inbound) (bool, error) {
	for _, a := range in.Attachments {
		got := ""
		r, err := a.Open(ctx)
		if err == nil {
			b, _ := io.ReadAll(r)
			r.Close()
			got = string(b)
		} else {
			got = "error: " + err.Error()
		}
		s.mu.Lock()
		s.files[a.Name], s.meta[a.Name] = got, a
		s.mu.Unlock()
	}
	return s.fakeSink.Deliver(ctx, in)
}

func (s *fileSink) file(name string) (string, gateway.Attachment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.files[name], s.meta[name]
}

func (h *harness) media(m *models.Message) {
	m.From, m.Chat, m.Date = &alice, aliceDM, int(time.Now().Unix())
	if m.ID == 0 {
		m.ID = 77
	}
	h.srv.Queue(&models.Update{Message: m})
}

func TestTelegramPhotoWithCaption(t *testing.T) {
	h := newHarness(t)
	sink := newFileSink()
	h.start(t, h.config(t), sink)
	small := h.srv.AddFile("s.jpg", []byte("small"))
	large := h.srv.AddFile("l.jpg", []byte("large photo bytes"))
	h.media(&models.Message{Caption: "what is this?", Photo: []models.PhotoSize{
		{FileID: small, Width: 90, Height: 90, FileSize: 5}, {FileID: large, Width: 1280, Height: 960, FileSize: 17}}})
	got := sink.waitN(t, 1)
	if got[0].Text != "what is this?" || len(got[0].Attachments) != 1 {
		t.Fatalf("inbound text %q with %d attachments", got[0].Text, len(got[0].Attachments))
	}
	if body, a := sink.file("photo.jpg"); body != "large photo bytes" || a.MIME != "image/jpeg" || a.Size != 17 {
		t.Errorf("photo = %q %+v, want the largest size", body, a)
	}
}

func TestTelegramDocumentVoiceStickerVideoNote(t *testing.T) {
	h := newHarness(t)
	sink := newFileSink()
	h.start(t, h.config(t), sink)
	h.media(&models.Message{
		Document:  &models.Document{FileID: h.srv.AddFile("r.pdf", []byte("%PDF")), FileName: "report.pdf", MimeType: "application/pdf", FileSize: 4},
		Voice:     &models.Voice{FileID: h.srv.AddFile("v.oga", []byte("OggS")), MimeType: "audio/ogg"},
		Sticker:   &models.Sticker{FileID: h.srv.AddFile("st.webp", []byte("RIFF"))},
		VideoNote: &models.VideoNote{FileID: h.srv.AddFile("vn.mp4", []byte("mp4"))},
	})
	h.media(&models.Message{ID: 78, Sticker: &models.Sticker{FileID: h.srv.AddFile("a.tgs", []byte("x")), IsAnimated: true}})
	h.media(&models.Message{ID: 79, Text: "after"})
	got := sink.waitN(t, 2) // the animated sticker alone is not a message
	if got[0].Text != "" || len(got[0].Attachments) != 4 || got[1].Text != "after" {
		t.Fatalf("inbounds = %+v", got)
	}
	for name, want := range map[string]string{"report.pdf": "%PDF", "voice.ogg": "OggS", "sticker.webp": "RIFF", "video_note.mp4": "mp4"} {
		if body, _ := sink.file(name); body != want {
			t.Errorf("%s = %q, want %q", name, body, want)
		}
	}
}

func TestTelegramDownloadFailureIsReported(t *testing.T) {
	h := newHarness(t)
	sink := newFileSink()
	h.start(t, h.config(t), sink)
	id := h.srv.AddFile("x.txt", []byte("x"))
	h.srv.BreakFile(id)
	h.media(&models.Message{Caption: "here", Document: &models.Document{FileID: id, FileName: "x.txt"}})
	got := sink.waitN(t, 1)
	body, _ := sink.file("x.txt")
	if got[0].Text != "here" || !strings.HasPrefix(body, "error: ") || !strings.Contains(body, "HTTP 500") {
		t.Fatalf("inbound %q, file read %q: want the text and a download error", got[0].Text, body)
	}
	if strings.Contains(body, telegramtest.Token) {
		t.Errorf("download error %q carries the token", body)
	}
}

func TestTelegramHostileDocumentNamePassedForSanitising(t *testing.T) {
	h := newHarness(t)
	sink := newFileSink()
	h.start(t, h.config(t), sink)
	h.media(&models.Message{Document: &models.Document{FileID: h.srv.AddFile("p", []byte("x")), FileName: "../../.ssh/authorized_keys"}})
	got := sink.waitN(t, 1)
	// The adapter keeps the sender's name; the files store sanitises it
	// (files.SanitizeName, tested there and in the gateway).
	if len(got[0].Attachments) != 1 || got[0].Attachments[0].Name != "../../.ssh/authorized_keys" {
		t.Fatalf("attachments %+v", got[0].Attachments)
	}
}
