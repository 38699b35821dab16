package discord_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
)

// A file goes as a multipart attachment with its caption; a retry of the
// recorded upload posts nothing; a file over the upload limit is answered
// with a message naming it and the limit.
func TestSendFileAttachment(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	data := []byte("%PDF-1.4 fake report")
	path := filepath.Join(t.TempDir(), "report.pdf")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	file := &gateway.SentFile{Path: path, ID: "report.pdf", Name: "report.pdf", MIME: "application/pdf", Size: int64(len(data))}
	parts := &gatewaytest.Parts{}
	out := parts.Row(gateway.Outbound{Address: channelAddr, Kind: gateway.OutFile, Text: "the report", File: file}, 7)
	id, err := r.a.SendFile(context.Background(), out)
	if err != nil {
		t.Fatalf("SendFile: %v", err)
	}
	sent := srv.Sent(channel)
	if len(sent) != 1 || sent[0].ID != id || sent[0].Content != "the report" || len(sent[0].Files) != 1 {
		t.Fatalf("sent = %+v, want one message with the caption and the file", sent)
	}
	if f := sent[0].Files[0]; f.Name != "report.pdf" || !bytes.Equal(f.Data, data) {
		t.Errorf("attachment = %s %q, want report.pdf %q", f.Name, f.Data, data)
	}
	if again, err := r.a.SendFile(context.Background(), parts.Row(out, 7)); err != nil || again != id || len(srv.Sent(channel)) != 1 {
		t.Errorf("retry = %q, %v; want %q and no new message", again, err, id)
	}

	big := &gateway.SentFile{Path: path, ID: "huge.bin", Name: "huge.bin", Size: discordtest.MaxUploadBytes + 1}
	if _, err := r.a.SendFile(context.Background(), gateway.Outbound{ID: 8, Address: channelAddr, Kind: gateway.OutFile, File: big}); err != nil {
		t.Fatalf("SendFile(too large): %v", err)
	}
	sent = srv.Sent(channel)
	last := sent[len(sent)-1]
	if len(sent) != 2 || len(last.Files) != 0 || !strings.Contains(last.Content, "huge.bin") || !strings.Contains(last.Content, "upload limit") {
		t.Errorf("too large file answered with %+v, want a message naming it and the limit", last)
	}
}
