package telegram

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
)

func writeSnapshot(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Images under 10 MB go as sendPhoto, other files (and larger images) as
// sendDocument, in the lane's topic, replying to the message, with the
// caption cut to 1024 units; a retry of a recorded upload sends nothing.
func TestSendFilePhotoOrDocument(t *testing.T) {
	tests := []struct {
		name       string
		file       gateway.SentFile
		caption    string
		wantMethod string
	}{
		{name: "small image is a photo", file: gateway.SentFile{Name: "chart.png", MIME: "image/png", IsImage: true, Size: 10},
			caption: "the chart", wantMethod: "sendPhoto"},
		{name: "large image is a document", file: gateway.SentFile{Name: "huge.png", MIME: "image/png", IsImage: true, Size: 11 << 20},
			wantMethod: "sendDocument"},
		{name: "other file is a document", file: gateway.SentFile{Name: "report.pdf", MIME: "application/pdf", Size: 10},
			caption: strings.Repeat("😀", 600), wantMethod: "sendDocument"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, a := sendHarness(t)
			data := []byte("bytes of " + tt.file.Name)
			tt.file.Path = writeSnapshot(t, tt.file.Name, data)
			parts := &gatewaytest.Parts{}
			out := parts.Row(gateway.Outbound{Address: topic42, Kind: gateway.OutFile, Text: tt.caption,
				ReplyTo: "-1001:7", File: &tt.file}, int64(i+1))
			id, err := a.SendFile(context.Background(), out)
			if err != nil {
				t.Fatalf("SendFile: %v", err)
			}
			ups := h.srv.Uploads()
			if len(ups) != 1 {
				t.Fatalf("uploads = %d, want 1", len(ups))
			}
			u := ups[0]
			if u.Method != tt.wantMethod || u.FileName != tt.file.Name || !bytes.Equal(u.Data, data) ||
				u.ThreadID != 42 || u.ReplyTo != 7 {
				t.Errorf("upload = %+v, want %s of %s in topic 42 replying to 7", u, tt.wantMethod, tt.file.Name)
			}
			if n := utf16Len(u.Caption); n > maxCaptionUnits || !strings.HasPrefix(tt.caption, u.Caption) {
				t.Errorf("caption of %d units %q, want a prefix of the caption within %d", n, u.Caption, maxCaptionUnits)
			}
			again, err := a.SendFile(context.Background(), parts.Row(out, int64(i+1)))
			if err != nil || again != id || len(h.srv.Uploads()) != 1 {
				t.Errorf("retry = %q, %v with %d uploads; want %q and no new upload", again, err, len(h.srv.Uploads()), id)
			}
		})
	}
}
