package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
)

// botAPIRecorder is a bare Bot API that records each request's encoding
// and answers with answer(method).
type botAPIRecorder struct {
	mu   sync.Mutex
	seen []recordedRequest
}

type recordedRequest struct {
	method, contentType string
	length              int64
	body                map[string]any
}

func (r *botAPIRecorder) handler(answer func(method string) string) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		method := req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]
		raw, _ := io.ReadAll(req.Body)
		rec := recordedRequest{method: method, contentType: req.Header.Get("Content-Type"), length: req.ContentLength}
		_ = json.Unmarshal(raw, &rec.body)
		r.mu.Lock()
		r.seen = append(r.seen, rec)
		r.mu.Unlock()
		_, _ = io.WriteString(w, answer(method))
	}
}

func newRecordedAdapter(t *testing.T, answer func(method string) string) (*Adapter, *botAPIRecorder) {
	t.Helper()
	rec := &botAPIRecorder{}
	srv := httptest.NewServer(rec.handler(answer))
	t.Cleanup(srv.Close)
	a, err := New(Config{Token: "123:SECRET", APIURL: srv.URL, Cursor: newMemCursor(), AllowedUsers: []int64{alice.ID}})
	if err != nil {
		t.Fatal(err)
	}
	return a, rec
}

// TestTextMethodsAreSentAsJSON: a reply, its edit and the typing
// indicator each go as one JSON body with a length (no multipart pipe),
// with the parameters Telegram expects.
func TestTextMethodsAreSentAsJSON(t *testing.T) {
	a, rec := newRecordedAdapter(t, func(method string) string {
		if method == "sendMessage" {
			return `{"ok":true,"result":{"message_id":77,"date":1,"chat":{"id":1001,"type":"private"},"text":"hi"}}`
		}
		return `{"ok":true,"result":true}`
	})
	ctx := context.Background()
	dm := gateway.Address{Platform: PlatformName, Kind: gateway.LaneDM, ChatID: "1001"}
	if err := a.Typing(ctx, dm); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	id, err := a.Send(ctx, gateway.Outbound{Address: dm, Text: "hi"})
	if err != nil || id != "1001:77" {
		t.Fatalf("Send = %q, %v; want 1001:77", id, err)
	}
	if err := a.Edit(ctx, dm, id, "hi there"); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	want := []struct{ method, key, value string }{
		{"sendChatAction", "action", "typing"},
		{"sendMessage", "text", "hi"},
		{"editMessageText", "text", "hi there"},
	}
	if len(rec.seen) != len(want) {
		t.Fatalf("requests %+v, want %d", rec.seen, len(want))
	}
	for i, w := range want {
		got := rec.seen[i]
		if got.method != w.method || got.contentType != "application/json" || got.length <= 0 {
			t.Errorf("request %d: %s as %q, length %d; want %s as application/json with a length",
				i, got.method, got.contentType, got.length, w.method)
		}
		if got.body[w.key] != w.value || got.body["chat_id"] != float64(1001) {
			t.Errorf("request %d (%s): body %v, want %s=%q and chat_id 1001", i, got.method, got.body, w.key, w.value)
		}
	}
}

// TestTextMethodErrorsKeepTheirMeaning: Bot API failures on the JSON path
// classify as before: 429 is a retry after its retry_after, 403 is
// permanent, and the token never shows in the error.
func TestTextMethodErrorsKeepTheirMeaning(t *testing.T) {
	answers := map[string]string{
		"sendChatAction": `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}`,
		"sendMessage":    `{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}`,
	}
	a, _ := newRecordedAdapter(t, func(method string) string { return answers[method] })
	ctx := context.Background()
	dm := gateway.Address{Platform: PlatformName, Kind: gateway.LaneDM, ChatID: "1001"}

	err := a.Typing(ctx, dm)
	var ra *gateway.RetryAfterError
	if !errors.As(err, &ra) || ra.After.Seconds() != 3 {
		t.Errorf("Typing = %v, want a RetryAfterError of 3s", err)
	}
	_, err = a.Send(ctx, gateway.Outbound{Address: dm, Text: "hi"})
	if !errors.Is(err, gateway.ErrPermanent) || !strings.Contains(err.Error(), "blocked by the user") {
		t.Errorf("Send = %v, want a permanent error naming the cause", err)
	}
	for _, e := range []error{err, ra} {
		if e != nil && strings.Contains(e.Error(), "SECRET") {
			t.Errorf("error %q shows the token", e)
		}
	}
}
