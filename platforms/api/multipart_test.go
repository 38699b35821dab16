package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// fileSink records what each message's attachments held when Deliver ran
// (the gateway reads them then; the spool is gone after the request).
type fileSink struct {
	*fakeSink
	mu    sync.Mutex
	texts []string
	got   map[string][]byte // file name → bytes
	mimes map[string]string
	paths []string
}

func (s *fileSink) Deliver(ctx context.Context, in gateway.Inbound) (bool, error) {
	for _, a := range in.Attachments {
		r, err := a.Open(ctx)
		if err != nil {
			return false, err
		}
		b, _ := io.ReadAll(r)
		r.Close()
		s.mu.Lock()
		s.got[a.Name], s.mimes[a.Name] = b, a.MIME
		if f, ok := r.(*os.File); ok {
			s.paths = append(s.paths, f.Name())
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.texts = append(s.texts, in.Text)
	s.mu.Unlock()
	return s.fakeSink.Deliver(ctx, in)
}

func startUploads(t *testing.T, maxFile int64) (*Platform, *fileSink) {
	t.Helper()
	var sink *fileSink
	p := runAPI(t, Config{MaxFileBytes: maxFile, SpoolDir: t.TempDir()}, func(p *Platform, st *store.Store) testGateway {
		sink = &fileSink{fakeSink: newFakeSink(p, st, echo), got: map[string][]byte{}, mimes: map[string]string{}}
		return sink
	})
	return p, sink
}

type part struct {
	field, filename, contentType, body string
}

func multipartBody(t *testing.T, parts ...part) (string, *bytes.Buffer) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		disp := fmt.Sprintf(`form-data; name=%q`, p.field)
		if p.filename != "" {
			disp += fmt.Sprintf(`; filename=%q`, p.filename)
		}
		h.Set("Content-Disposition", disp)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, p.body)
	}
	mw.Close()
	return mw.FormDataContentType(), &b
}

func postMultipart(t *testing.T, p *Platform, contentType string, body io.Reader) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/up/messages", body)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(got)
}

func TestMultipartMessageCarriesFiles(t *testing.T) {
	t.Parallel()
	p, sink := startUploads(t, 1<<20)
	ct, body := multipartBody(t,
		part{"file", "photo.jpg", "image/jpeg", "\xff\xd8\xff jpeg"},
		part{"text", "", "", "look at this"}, // fields may follow the files
		part{"user", "", "", "ann"},
		part{"file", "notes.txt", "text/plain", "some notes"},
	)
	code, got := postMultipart(t, p, ct, body)
	if code != 200 || !strings.Contains(got, "re: look at this") {
		t.Fatalf("answer %d %s, want 200 with the echo", code, got)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if string(sink.got["photo.jpg"]) != "\xff\xd8\xff jpeg" || string(sink.got["notes.txt"]) != "some notes" ||
		sink.mimes["photo.jpg"] != "image/jpeg" {
		t.Errorf("files seen by the sink = %q (types %v)", sink.got, sink.mimes)
	}
	for _, path := range sink.paths {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("spool file %s left behind (%v)", path, err)
		}
	}
}

func TestMultipartFileOnly(t *testing.T) {
	t.Parallel()
	p, sink := startUploads(t, 1<<20)
	ct, body := multipartBody(t, part{"file", "../../etc/passwd", "text/plain", "x"})
	if code, got := postMultipart(t, p, ct, body); code != 200 {
		t.Fatalf("a message of only a file: %d %s, want 200", code, got)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	// mime/multipart keeps only the name's last element; the files store
	// sanitises what is left.
	if len(sink.texts) != 1 || sink.texts[0] != "" || string(sink.got["passwd"]) != "x" {
		t.Errorf("sink saw texts %q files %q", sink.texts, sink.got)
	}
}

func TestMultipartRefusals(t *testing.T) {
	t.Parallel()
	p, sink := startUploads(t, 10)
	big := strings.Repeat("x", 11)
	tests := []struct {
		name    string
		parts   []part
		ctype   string // overrides the multipart type
		want    int
		wantErr string
	}{
		{"file over the limit", []part{{"text", "", "", "hi"}, {"file", "big.bin", "", big}}, "", 413, `big.bin\" is larger than the 10 bytes limit`},
		{"too many files", manyFiles(MaxFiles + 1), "", 413, "at most 16 files"},
		{"unknown field", []part{{"text", "", "", "hi"}, {"attachment", "a", "", "x"}}, "", 400, `unknown multipart field \"attachment\"`},
		{"no text no file", []part{{"user", "", "", "ann"}}, "", 400, "text is empty"},
		{"other media type", []part{{"text", "", "", "hi"}}, "text/plain", 415, "multipart/form-data"},
		{"form urlencoded", []part{{"text", "", "", "hi"}}, "application/x-www-form-urlencoded", 415, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct, body := multipartBody(t, tt.parts...)
			if tt.ctype != "" {
				ct = tt.ctype
			}
			code, got := postMultipart(t, p, ct, body)
			if code != tt.want || !strings.Contains(got, tt.wantErr) {
				t.Errorf("answer %d %s, want %d mentioning %q", code, got, tt.want, tt.wantErr)
			}
		})
	}
	if n := sink.received(); n != 0 {
		t.Errorf("%d refused messages reached the gateway", n)
	}
}

func TestMultipartBodyOverLimitDeclared(t *testing.T) {
	t.Parallel()
	p, _ := startUploads(t, 10)
	limit := maxUploadBytes(10)
	req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/up/messages", strings.NewReader("x"))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	req.ContentLength = limit + 1
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Fatalf("status %d, want 413", resp.StatusCode)
		}
	}
}

func manyFiles(n int) []part {
	out := []part{{"text", "", "", "hi"}}
	for i := 0; i < n; i++ {
		out = append(out, part{"file", fmt.Sprintf("f%d.txt", i), "", "x"})
	}
	return out
}
