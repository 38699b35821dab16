package attach

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/store"
)

func opener(body string) func(context.Context) (io.ReadCloser, error) {
	return func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
}

// Every file that cannot be taken is told by name and why, and the ones
// that can are saved in the lane's directory.
func TestSaveTellsEachRefusedFile(t *testing.T) {
	fs := files.New(t.TempDir(), files.Limits{MaxBytes: 8}, nil)
	in := chat.Inbound{Address: chat.Address{Platform: "test", Kind: chat.LaneDM, ChatID: "c"}, MessageID: "m1",
		Attachments: []chat.Attachment{
			{Name: "ok.txt", Size: 2, Open: opener("hi")},
			{Name: "big.bin", Size: 9, Open: opener("123456789")},
			{Name: "lost.png", Err: errors.New("download failed")},
		}}
	saved, notices := Save(context.Background(), fs, zap.NewNop(), in)
	if len(saved) != 1 || saved[0].Name != "ok.txt" {
		t.Fatalf("saved %+v, want ok.txt only", saved)
	}
	if b, err := os.ReadFile(saved[0].Path); err != nil || string(b) != "hi" {
		t.Errorf("saved file holds %q, %v", b, err)
	}
	if len(notices) != 2 || !strings.Contains(notices[0], `"big.bin" was not received: it is larger than`) ||
		!strings.Contains(notices[1], `"lost.png" could not be received`) {
		t.Errorf("notices %q", notices)
	}
	if saved, notices := Save(context.Background(), nil, zap.NewNop(), in); len(saved) != 0 || len(notices) != 3 {
		t.Errorf("without a files store: saved %v, notices %q; want every file refused", saved, notices)
	}
	Discard(fs, in, saved)
	if _, err := os.Stat(saved[0].Path); !os.IsNotExist(err) {
		t.Errorf("a discarded file is still there: %v", err)
	}
}

func TestTurnTextNamesEveryFileAndSortsImagesAndAudio(t *testing.T) {
	att := []store.Attachment{
		{Path: "/f/a.png", Name: "a.png", MIME: "image/png", Size: 2048, IsImage: true},
		{Path: "/f/v.ogg", Name: "v.ogg", MIME: "audio/ogg", Size: 10},
	}
	got := TurnText("look", att)
	want := "look\n\n[Attached file: /f/a.png (name \"a.png\", type image/png, size 2 KiB)]\n" +
		"[Attached file: /f/v.ogg (name \"v.ogg\", type audio/ogg, size 10 bytes)]"
	if got != want {
		t.Errorf("TurnText =\n%s\nwant\n%s", got, want)
	}
	if TurnText("only text", nil) != "only text" {
		t.Error("text without files changed")
	}
	if im, au := Images(att), Audio(att); len(im) != 1 || im[0] != "/f/a.png" || len(au) != 1 || au[0] != "/f/v.ogg" || !HasAudio(att) {
		t.Errorf("images %v, audio %v", im, au)
	}
}
