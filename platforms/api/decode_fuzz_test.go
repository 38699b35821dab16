package api

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/chat"
)

// FuzzReadMessage decodes any JSON body on any lane name. Either the
// request is accepted (a valid lane whose session key parses back to it,
// text within limits or refused as empty) with nothing written, or it is
// answered with a 4xx JSON error; never a panic, a 5xx or a silent drop.
func FuzzReadMessage(f *testing.F) {
	for _, seed := range []struct{ lane, body string }{
		{"main", `{"text":"hi","user":"me","id":"m-1"}`}, {"a.b_c-1", `{"text":"x"}`},
		{"", `{"text":"x"}`}, {"../x", `{"text":"x"}`}, {"main", `{"text":"  "}`}, {"main", `[]`},
		{"main", `{"text":1}`}, {"main", `{"text":"x"} trailing`}, {"main", ``}, {"é", `{"text":"x"}`},
		{"main", `{"text":"x","id":"` + strings.Repeat("i", 129) + `"}`},
	} {
		f.Add(seed.lane, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, lane string, body []byte) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/api/lanes/x/messages", bytes.NewReader(body))
		r.SetPathValue("lane", lane)
		gotLane, req, ok := readMessage(w, r)
		checkDecoded(t, w, lane, gotLane, req, ok)
	})
}

// FuzzReadUpload decodes any multipart body. Accepted: a valid lane, at
// most MaxFiles files each within the file limit, spooled where the
// gateway can open them. Refused: a 4xx JSON error. Either way no spool
// file outlives the request, nor any of its reservation in the spool.
func FuzzReadUpload(f *testing.F) {
	const boundary = "fuzzboundary"
	for _, parts := range [][][3]string{
		{{"text", "", "hello"}},
		{{"text", "", "see file"}, {"file", "report.pdf", "%PDF-1.4"}},
		{{"file", "../../etc/passwd", "x"}, {"user", "", "me"}, {"id", "", "u-1"}},
		{{"file", "big.bin", strings.Repeat("b", 300)}},
		{{"bogus", "", "x"}},
		{{"text", "", ""}},
	} {
		f.Add("main", multipartSeed(f, boundary, parts))
	}
	f.Add("main", []byte("--fuzzboundary\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nunterminated"))
	f.Add("main", []byte("garbage"))
	f.Fuzz(func(t *testing.T, lane string, body []byte) {
		spool := t.TempDir()
		p := &Platform{cfg: Config{MaxFileBytes: 256, SpoolDir: spool}, spool: &spoolBudget{max: defaultMaxSpool(256)}}
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/api/lanes/x/messages", bytes.NewReader(body))
		r.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
		r.SetPathValue("lane", lane)
		gotLane, req, up, ok := p.readUpload(w, r)
		checkDecoded(t, w, lane, gotLane, req, ok)
		if ok {
			if n := up.count(); n > MaxFiles {
				t.Fatalf("accepted %d files, limit %d", n, MaxFiles)
			}
			for _, s := range up.parts {
				if st, err := os.Stat(s.path); err != nil || st.Size() != s.size || s.size > p.cfg.MaxFileBytes {
					t.Fatalf("spooled %q: size %d, stat %v, limit %d", s.name, s.size, err, p.cfg.MaxFileBytes)
				}
			}
		}
		up.remove()
		if left, _ := os.ReadDir(spool); len(left) > 0 {
			t.Fatalf("%d spool files left after the request (ok=%v)", len(left), ok)
		}
		if used := p.spool.inUse(); used != 0 {
			t.Fatalf("%d bytes of the spool still reserved after the request (ok=%v)", used, ok)
		}
	})
}

func multipartSeed(f *testing.F, boundary string, parts [][3]string) []byte {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if err := mw.SetBoundary(boundary); err != nil {
		f.Fatal(err)
	}
	for _, p := range parts {
		var (
			pw  interface{ Write([]byte) (int, error) }
			err error
		)
		if p[1] != "" {
			pw, err = mw.CreateFormFile(p[0], p[1])
		} else {
			pw, err = mw.CreateFormField(p[0])
		}
		if err != nil {
			f.Fatal(err)
		}
		pw.Write([]byte(p[2]))
	}
	mw.Close()
	return b.Bytes()
}

// checkDecoded holds a decoded message to what the handler relies on.
func checkDecoded(t *testing.T, w *httptest.ResponseRecorder, lane, gotLane string, req messageRequest, ok bool) {
	t.Helper()
	if !ok {
		if w.Code < 400 || w.Code > 499 {
			t.Fatalf("refused with status %d, want 4xx", w.Code)
		}
		var e struct{ Error string }
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" {
			t.Fatalf("refusal body %q is not a JSON error", w.Body.Bytes())
		}
		return
	}
	if w.Body.Len() > 0 {
		t.Fatalf("accepted but answered %d %q", w.Code, w.Body.Bytes())
	}
	if gotLane != lane {
		t.Fatalf("lane %q decoded as %q", lane, gotLane)
	}
	key, valid := LaneSessionKey(lane)
	if !valid {
		t.Fatalf("accepted lane name %q that LaneSessionKey refuses", lane)
	}
	if a, err := chat.ParseSessionKey(key); err != nil || a != laneAddress(lane) {
		t.Fatalf("lane %q: key %q parses to %+v, %v", lane, key, a, err)
	}
	switch {
	case strings.TrimSpace(req.Text) == "" && req.files.count() == 0:
		t.Fatalf("accepted a message with neither text nor files")
	case len(req.Text) > MaxTextBytes || len(req.ID) > 128:
		t.Fatalf("accepted text of %d bytes, id of %d", len(req.Text), len(req.ID))
	case req.User == "":
		t.Fatalf("accepted a message with no user")
	}
}
