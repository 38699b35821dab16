package gateway

import (
	"context"
	"testing"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// fileFeature is a feature whose /report sends data as a file.
type fileFeature struct {
	data []byte
	errs chan error
}

func (f fileFeature) Name() string { return "report" }

func (f fileFeature) Register(h ext.Host) error {
	h.Command(ext.Command{Name: "report", Description: "Send the report", Run: func(ctx context.Context, c ext.Call) bool {
		f.errs <- h.SendFile(ctx, c.Lane.Address(), c.MsgID, ext.File{Name: "report.txt", MIME: "text/plain",
			Caption: "the report", Data: f.data})
		return true
	}})
	return nil
}

// TestFeatureSendsAFile: a feature's file goes through the outbox with
// its caption, its copy kept in the files store until delivered; without
// a files store, or past files.max_bytes, it is refused and nothing is
// sent.
func TestFeatureSendsAFile(t *testing.T) {
	tests := []struct {
		name  string
		store bool
		max   int64
		data  string
		sent  bool
	}{
		{"sent", true, 0, "numbers", true},
		{"no files store", false, 0, "numbers", false},
		{"too large", true, 3, "numbers", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fileFeature{data: []byte(tc.data), errs: make(chan error, 1)}
			h := newHarness(t, withFeature(f), func(c *Config) {
				if tc.store {
					c.Files = files.New(t.TempDir(), files.Limits{MaxBytes: tc.max}, nil)
				}
			})
			h.start(t)
			h.send(t, "a", "m1", "/report")
			if err := <-f.errs; (err == nil) != tc.sent {
				t.Fatalf("SendFile: %v, want sent %v", err, tc.sent)
			}
			if !tc.sent {
				return
			}
			got := h.p.replyTo(t, "m1")
			if got.Kind != OutFile || got.File == nil || got.File.Name != "report.txt" || got.Text != "the report" {
				t.Errorf("delivered %+v, want report.txt with the caption %q", got, "the report")
			}
		})
	}
}
