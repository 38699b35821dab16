package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/api"
)

// upload is one file part of a multipart message.
type upload struct {
	name, contentType string
	body              []byte
}

// askMultipart posts a multipart message (text, user, id fields and file
// parts) and returns the status and the decoded answer.
func (in *instance) askMultipart(t *testing.T, lane, text string, ups ...upload) (int, api.Response) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range [][2]string{{"text", text}, {"user", "tester"}} {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range ups {
		h := make(map[string][]string)
		h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, u.name)}
		h["Content-Type"] = []string{u.contentType}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(u.body)
	}
	mw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+in.api.Addr()+"/api/lanes/"+lane+"/messages", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out api.Response
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func pngBytes(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// An image and a document sent on the API lane as multipart reach the
// model through the real app-server: the image as an input_image part, the
// document's absolute path in the turn text, with the file on disk holding
// the bytes sent.
func TestAPIMultipartFilesReachModel(t *testing.T) {
	w := newWorld(t)
	root := filepath.Join(w.dir, "state", "files")
	in := w.start(t, gateway.Config{Files: files.New(root, files.Limits{}, nil)})
	doc := []byte("quarterly numbers: 1, 2, 3\n")
	code, resp := in.askMultipart(t, "files", "what is in these?",
		upload{"chart.png", "image/png", pngBytes(t)}, upload{"../../report.txt", "text/plain", doc})
	if code != http.StatusOK || resp.Status != "completed" {
		t.Fatalf("multipart answer = %d %+v, want 200 completed", code, resp)
	}
	reqs := w.model.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model got no request")
	}
	last := reqs[len(reqs)-1]
	parts := last.LastUserParts()
	if !slices.Contains(parts, "input_image") {
		t.Errorf("last user message parts = %v, want an input_image", parts)
	}
	text := last.LastUserText()
	if !strings.Contains(text, "what is in these?") {
		t.Errorf("user text %q lacks the message text", text)
	}
	var docPath string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "report.txt") {
			p, _, _ := strings.Cut(strings.TrimPrefix(line, "[Attached file: "), " (")
			docPath = p
		}
	}
	if docPath == "" || !filepath.IsAbs(docPath) || !strings.HasPrefix(docPath, root+string(filepath.Separator)) {
		t.Fatalf("document path %q in %q: want an absolute path under %s", docPath, text, root)
	}
	got, err := os.ReadFile(docPath)
	if err != nil || !bytes.Equal(got, doc) {
		t.Fatalf("document on disk = %q, %v; want %q", got, err, doc)
	}
	if !strings.Contains(text, `name "report.txt"`) || !strings.Contains(text, "text/plain") ||
		!strings.Contains(text, files.FormatSize(int64(len(doc)))) {
		t.Errorf("file line in %q lacks the name, type or size", text)
	}
}
