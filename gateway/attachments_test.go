package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/store"
)

var pngHead = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00")

func fileOf(name string, body []byte) Attachment {
	return Attachment{Name: name, Size: int64(len(body)),
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }}
}

func withFilesStore(root string, max int64) harnessOpt {
	return func(c *Config) { c.Files = files.New(root, files.Limits{MaxBytes: max}, nil) }
}

// turnText waits for the reply to id and returns the text the turn ran with
// and the images it was given.
func (h *harness) turnOf(t *testing.T, id string) (string, []string) {
	t.Helper()
	h.p.replyTo(t, id)
	h.cx.mu.Lock()
	defer h.cx.mu.Unlock()
	n := len(h.cx.turns)
	if n == 0 {
		t.Fatal("no turn ran")
	}
	_, text, _ := strings.Cut(h.cx.turns[n-1], ":")
	return text, h.cx.images[n-1]
}

func TestPhotoWithCaptionRunsWithImage(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, withFilesStore(root, 1<<20))
	h.start(t)
	_, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: "m1", SenderID: "u1",
		Text: "what is this?", Attachments: []Attachment{fileOf("photo.png", pngHead)}})
	if err != nil {
		t.Fatal(err)
	}
	// Deliver returned: the file is on disk and the row lists it.
	h.st.mu.Lock()
	att := h.st.inbound[0].Attachments
	h.st.mu.Unlock()
	if len(att) != 1 || !att[0].IsImage || att[0].MIME != "image/png" {
		t.Fatalf("recorded attachments = %+v", att)
	}
	if b, err := os.ReadFile(att[0].Path); err != nil || !bytes.Equal(b, pngHead) {
		t.Fatalf("stored file = %q, %v", b, err)
	}
	text, images := h.turnOf(t, "m1")
	if len(images) != 1 || images[0] != att[0].Path {
		t.Errorf("turn images = %v, want [%s]", images, att[0].Path)
	}
	if !strings.HasPrefix(text, "what is this?\n\n[Attached file: "+att[0].Path) || !strings.Contains(text, "image/png") {
		t.Errorf("turn text = %q", text)
	}
}

func TestDocumentOnlyIsAMessage(t *testing.T) {
	h := newHarness(t, withFilesStore(t.TempDir(), 1<<20))
	h.start(t)
	if _, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: "m1", SenderID: "u1",
		Attachments: []Attachment{fileOf("report.pdf", []byte("%PDF-1.4 body"))}}); err != nil {
		t.Fatal(err)
	}
	text, images := h.turnOf(t, "m1")
	if len(images) != 0 || !strings.HasPrefix(text, "[Attached file: ") || !strings.Contains(text, `name "report.pdf"`) ||
		!strings.Contains(text, "application/pdf") || !strings.Contains(text, "13 bytes") {
		t.Errorf("turn text %q images %v", text, images)
	}
}

func TestOversizedAndFailedFilesAreToldTheRestRuns(t *testing.T) {
	h := newHarness(t, withFilesStore(t.TempDir(), 8))
	h.start(t)
	broken := Attachment{Name: "lost.txt", Open: func(context.Context) (io.ReadCloser, error) {
		return nil, errors.New("HTTP 502")
	}}
	unsized := fileOf("big2.bin", bytes.Repeat([]byte("y"), 9))
	unsized.Size = 0 // the platform did not say: the store's limit catches it
	_, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: "m1", SenderID: "u1", Text: "see files",
		Attachments: []Attachment{fileOf("big.bin", bytes.Repeat([]byte("x"), 100)), broken, unsized, fileOf("ok.txt", []byte("fine"))}})
	if err != nil {
		t.Fatal(err)
	}
	var notices []string
	var reply Outbound
	for reply.Kind != OutReply {
		o := h.p.next(t)
		if o.Kind == OutNotice {
			notices = append(notices, o.Text)
		} else if o.Kind == OutReply {
			reply = o
		}
	}
	joined := strings.Join(notices, "\n")
	for _, want := range []string{`"big.bin" was not received: it is larger than the 8 bytes limit`,
		`"big2.bin" was not received: it is larger than the 8 bytes limit`, `"lost.txt" could not be received`} {
		if !strings.Contains(joined, want) {
			t.Errorf("notices %q lack %q", notices, want)
		}
	}
	h.cx.mu.Lock()
	turn := h.cx.turns[len(h.cx.turns)-1]
	h.cx.mu.Unlock()
	if !strings.Contains(turn, "see files") || !strings.Contains(turn, `name "ok.txt"`) || strings.Contains(turn, "big.bin") {
		t.Errorf("turn = %q, want the text and ok.txt only", turn)
	}
}

func TestAllFilesRefusedRunsNothing(t *testing.T) {
	h := newHarness(t, withFilesStore(t.TempDir(), 8))
	h.start(t)
	if _, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: "m1", SenderID: "u1",
		Attachments: []Attachment{{Name: "x.bin", Err: errors.New("download failed")}}}); err != nil {
		t.Fatal(err)
	}
	if o := h.p.next(t); o.Kind != OutNotice || !strings.Contains(o.Text, `"x.bin" could not be received`) {
		t.Fatalf("outbound = %+v, want the failure notice", o)
	}
	h.cx.mu.Lock()
	defer h.cx.mu.Unlock()
	if len(h.cx.turns) != 0 {
		t.Errorf("turns %v ran for a message with nothing left", h.cx.turns)
	}
}

func TestHostileFileNameStaysInside(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, withFilesStore(root, 1<<20))
	h.start(t)
	if _, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: "m1", SenderID: "u1", Text: "x",
		Attachments: []Attachment{fileOf("../../../etc/passwd\x00.txt", []byte("data"))}}); err != nil {
		t.Fatal(err)
	}
	h.turnOf(t, "m1")
	h.st.mu.Lock()
	att := h.st.inbound[0].Attachments
	h.st.mu.Unlock()
	if len(att) != 1 || !strings.HasPrefix(att[0].Path, root+string(filepath.Separator)) ||
		strings.Contains(att[0].Name, "/") || strings.Contains(att[0].Name, "\x00") {
		t.Fatalf("stored %+v, want a plain name under %s", att, root)
	}
}

func TestAudioToldOnce(t *testing.T) {
	h := newHarness(t, withFilesStore(t.TempDir(), 1<<20))
	h.start(t)
	ogg := []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00")
	told := 0
	for _, id := range []string{"m1", "m2"} {
		if _, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: id, SenderID: "u1",
			Attachments: []Attachment{fileOf("voice.ogg", ogg)}}); err != nil {
			t.Fatal(err)
		}
		for {
			o := h.p.next(t)
			if strings.Contains(o.Text, "not transcribed") {
				told++
			}
			if o.Kind == OutReply && o.InReplyTo == id {
				if !strings.Contains(o.Text, "voice.ogg") {
					t.Errorf("reply %q: the turn did not name the audio file", o.Text)
				}
				break
			}
		}
	}
	if told != 1 {
		t.Errorf("told %d times that audio is not transcribed, want once", told)
	}
}

func TestRedeliveredFilesAreNotKeptTwice(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, withFilesStore(root, 1<<20))
	h.start(t)
	in := Inbound{Address: apiAddr("a"), MessageID: "m1", SenderID: "u1", Attachments: []Attachment{fileOf("a.txt", []byte("1"))}}
	for i := 0; i < 2; i++ {
		if _, err := h.g.Deliver(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	h.p.replyTo(t, "m1")
	var names []string
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, d.Name())
		}
		return nil
	})
	if len(names) != 1 || names[0] != "a.txt" {
		t.Errorf("files on disk = %v, want only a.txt", names)
	}
}

// A message recorded with its files but not yet run when the daemon
// stopped runs after the restart with them: the row carries them.
func TestRestartRequeuesFilesWithTheMessage(t *testing.T) {
	st := newFakeStore()
	ctx := context.Background()
	if _, err := st.EnsureLane(ctx, laneKey(apiAddr("a"))); err != nil {
		t.Fatal(err)
	}
	att := []store.Attachment{{Path: "/state/files/a/m1/p.png", Name: "p.png", MIME: "image/png", Size: 9, IsImage: true},
		{Path: "/state/files/a/m1/n.txt", Name: "n.txt", MIME: "text/plain; charset=utf-8", Size: 3}}
	if _, _, err := st.RecordInbound(ctx, store.Inbound{Platform: "test", MessageID: "m1", SessionKey: laneA,
		Text: "look", Attachments: att}); err != nil {
		t.Fatal(err)
	}
	h := newHarnessOn(t, st)
	h.start(t)
	text, images := h.turnOf(t, "m1")
	if len(images) != 1 || images[0] != att[0].Path {
		t.Errorf("images after restart = %v, want [%s]", images, att[0].Path)
	}
	if !strings.Contains(text, "look\n\n[Attached file: /state/files/a/m1/p.png") || !strings.Contains(text, "/state/files/a/m1/n.txt") {
		t.Errorf("turn text after restart = %q", text)
	}
}
