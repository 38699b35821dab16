package discord_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
)

// storingSink saves each attachment into a files.Store while Deliver runs,
// as the gateway does, and records what was saved or why not.
type storingSink struct {
	*recSink
	st    *files.Store
	root  string
	mu    sync.Mutex
	saved map[string]files.Saved // sender's name → stored
	errs  map[string]error
}

func (s *storingSink) Deliver(ctx context.Context, in gateway.Inbound) (bool, error) {
	for _, a := range in.Attachments {
		var sv files.Saved
		var err error
		if a.Size > s.st.Limits().MaxBytes {
			err = &files.TooLargeError{Limit: s.st.Limits().MaxBytes, Got: a.Size}
		} else if r, oerr := a.Open(ctx); oerr != nil {
			err = oerr
		} else {
			sv, err = s.st.Save(ctx, in.Address.SessionKey(), in.MessageID, a.Name, r)
			r.Close()
		}
		s.mu.Lock()
		if err != nil {
			s.errs[a.Name] = err
		} else {
			s.saved[a.Name] = sv
		}
		s.mu.Unlock()
	}
	return s.recSink.Deliver(ctx, in)
}

func startStoring(t *testing.T, srv *discordtest.Server, maxBytes int64) (*running, *storingSink) {
	t.Helper()
	var ss *storingSink
	r := startWithSink(t, baseConfig(t, srv), func(rs *recSink) gateway.Sink {
		root := t.TempDir()
		ss = &storingSink{recSink: rs, st: files.New(root, files.Limits{MaxBytes: maxBytes}, nil), root: root,
			saved: map[string]files.Saved{}, errs: map[string]error{}}
		return ss
	})
	return r, ss
}

func TestDiscordMultipleAttachments(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r, ss := startStoring(t, srv, 1<<20)
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, MentionBot: true, Content: "two files",
		Attachments: []discordtest.File{{Name: "shot.png", ContentType: "image/png", Data: png},
			{Name: "log.txt", ContentType: "text/plain", Data: []byte("line 1\n")}}})
	in := r.sink.next(t)
	if in.Text != "two files" || len(in.Attachments) != 2 {
		t.Fatalf("inbound %q with %d attachments", in.Text, len(in.Attachments))
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if sv := ss.saved["shot.png"]; !sv.IsImage || sv.MIME != "image/png" {
		t.Errorf("shot.png saved as %+v", sv)
	}
	if b, err := os.ReadFile(ss.saved["log.txt"].Path); err != nil || string(b) != "line 1\n" {
		t.Errorf("log.txt on disk = %q, %v", b, err)
	}
	if n := len(srv.Downloads()); n != 2 {
		t.Errorf("%d downloads, want 2", n)
	}
}

func TestDiscordAttachmentOnlyOversizedBrokenAndHostile(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r, ss := startStoring(t, srv, 16)
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, MentionBot: true, Attachments: []discordtest.File{
		{Name: "big.bin", Data: []byte("x"), Size: 1 << 20},
		{Name: "gone.txt", Data: []byte("x"), Broken: true},
		{Name: "../../evil.sh", Data: []byte("echo hi")},
	}})
	in := r.sink.next(t)
	if strings.TrimSpace(in.Text) != "" || len(in.Attachments) != 3 {
		t.Fatalf("inbound %q with %d attachments, want only the files", in.Text, len(in.Attachments))
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var tl *files.TooLargeError
	if !errors.As(ss.errs["big.bin"], &tl) || tl.Limit != 16 {
		t.Errorf("big.bin: %v, want a TooLargeError of 16 bytes", ss.errs["big.bin"])
	}
	if err := ss.errs["gone.txt"]; err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("gone.txt: %v, want a download failure", err)
	}
	evil, ok := ss.saved["../../evil.sh"]
	if !ok || strings.ContainsAny(evil.Name, `/\`) || !strings.HasPrefix(evil.Path, ss.root+string(filepath.Separator)) {
		t.Errorf("hostile name stored as %+v", evil)
	}
	for _, p := range srv.Downloads() {
		if strings.HasSuffix(p, "big.bin") {
			t.Error("an attachment over the limit was downloaded")
		}
	}
}
