package webconsole_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/store/storetest"
	"github.com/gatewayd/gatewayd/webconsole"
)

// openTestStore opens a real store with two lanes and one committed turn.
func openTestStore(t *testing.T) *store.Store { return storetest.OpenWithTurn(t) }

// storeBackend serves the admin routes from the store alone, as the
// sessions CLI's offline backend does.
type storeBackend struct{ st *store.Store }

func (b storeBackend) Lanes(ctx context.Context, limit int) ([]store.Lane, error) {
	return b.st.Lanes(ctx, limit)
}
func (b storeBackend) Lane(ctx context.Context, key string) (store.Lane, error) {
	return b.st.Lane(ctx, key)
}
func (b storeBackend) Transcript(ctx context.Context, key string, limit int) ([]store.Message, error) {
	return b.st.Transcript(ctx, key, limit)
}
func (b storeBackend) LaneUsagePeriods(ctx context.Context, key, sender string, at time.Time, loc *time.Location) (store.UsagePeriods, error) {
	return b.st.LaneUsagePeriods(ctx, key, sender, at, loc)
}
func (b storeBackend) Search(ctx context.Context, query string, limit int) ([]store.Message, error) {
	return b.st.Search(ctx, query, limit)
}
func (b storeBackend) Reset(ctx context.Context, key string) error {
	_, err := b.st.ResetLane(ctx, key, "reset by operator")
	return err
}

func TestAdminHandlerAuthAndMethods(t *testing.T) {
	st := openTestStore(t)
	h := webconsole.NewAdmin(storeBackend{st}, "tok", webconsole.Workdirs{})
	tests := []struct {
		name, method, path, auth string
		want                     int
	}{
		{"no token", "GET", "/api/admin/sessions", "", 401},
		{"wrong token", "GET", "/api/admin/sessions", "Bearer nope", 401},
		{"list", "GET", "/api/admin/sessions", "Bearer tok", 200},
		{"list POST", "POST", "/api/admin/sessions", "Bearer tok", 405},
		{"reset GET", "GET", "/api/admin/sessions/v1:api:default/reset", "Bearer tok", 405},
		{"reset missing", "POST", "/api/admin/sessions/v1:api:nope/reset", "Bearer tok", 404},
		{"reset", "POST", "/api/admin/sessions/v1:api:default/reset", "Bearer tok", 200},
		{"other route", "GET", "/api/admin/other", "Bearer tok", 404},
		{"slash in key", "GET", "/api/admin/sessions/a%2Fb", "Bearer tok", 400},
		{"search", "GET", "/api/admin/search?q=remember", "Bearer tok", 200},
		{"search without words", "GET", "/api/admin/search?q=+", "Bearer tok", 400},
		{"search POST", "POST", "/api/admin/search?q=x", "Bearer tok", 405},
		{"search no token", "GET", "/api/admin/search?q=x", "", 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := adminDo(h, tc.method, tc.path, tc.auth, "application/json", "{}")
			if rec.Code != tc.want {
				t.Errorf("%s %s = %d, want %d (%s)", tc.method, tc.path, rec.Code, tc.want, rec.Body.String())
			}
		})
	}
}

// adminDo sends one request to h; a GET goes without a body or type.
func adminDo(h http.Handler, method, path, auth, ctype, body string) *httptest.ResponseRecorder {
	var req *http.Request
	if method == http.MethodGet {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// An admin POST must say it is JSON (one with no body and no
// Content-Type reset a lane); {} and an empty JSON body are what the
// routes take, and a refused POST changes nothing.
func TestAdminPostsNeedJSON(t *testing.T) {
	st := openTestStore(t)
	h := webconsole.NewAdmin(storeBackend{st}, "tok", webconsole.Workdirs{})
	const reset = "/api/admin/sessions/v1:api:default/reset"
	generation := func() int64 {
		l, err := st.Lane(context.Background(), "v1:api:default")
		if err != nil {
			t.Fatal(err)
		}
		return l.Generation
	}
	tests := []struct {
		name, ctype, body string
		want              int
	}{
		{"no type, no body", "", "", 415},
		{"text/plain", "text/plain", "{}", 415},
		{"a form", "application/x-www-form-urlencoded", "a=b", 415},
		{"a bad type", "application/json;;", "{}", 415},
		{"not an object", "application/json", "[]", 400},
		{"null", "application/json", "null", 400},
		{"not JSON", "application/json", "reset", 400},
		{"too large", "application/json", `{"x":"` + strings.Repeat("x", 5000) + `"}`, 413},
		{"{}", "application/json", "{}", 200},
		{"empty JSON", "application/json; charset=utf-8", "", 200},
	}
	for _, tc := range tests {
		before := generation()
		rec := adminDo(h, http.MethodPost, reset, "Bearer tok", tc.ctype, tc.body)
		if rec.Code != tc.want {
			t.Errorf("%s: POST = %d %s, want %d", tc.name, rec.Code, rec.Body, tc.want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want a JSON error", tc.name, ct)
		}
		var body struct{ Error string }
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Errorf("%s: body %q: %v", tc.name, rec.Body, err)
		}
		if tc.want == 415 && !strings.Contains(body.Error, "application/json") {
			t.Errorf("%s: error %q does not name the type to send", tc.name, body.Error)
		}
		if reset := generation() != before; reset != (tc.want == 200) {
			t.Errorf("%s: answered %d and the lane was reset: %v", tc.name, rec.Code, reset)
		}
	}
}

// A {key} that is not a session key is refused before the backend is
// asked: a crafted one cannot name another route or another lane.
func TestAdminRefusesASegmentThatIsNotALaneName(t *testing.T) {
	st := openTestStore(t)
	h := webconsole.NewAdmin(storeBackend{st}, "tok", webconsole.Workdirs{})
	for _, seg := range []string{
		"..%2Fadmin%2Fsessions%2Fv1:api:B%2Freset%3F",
		"v1:api:..%2Fadmin%2Fsessions%2Fv1:api:B",
		"v1:api:a%2Fb",
		"v1:api:default%3Fx",
		"v1:api:a%20b",
		"default",
		"v2:api:default",
		"v1:telegram:chat:1",
		"v1:api:default:extra",
		"v1:" + strings.Repeat("k", 1100),
	} {
		for _, req := range []struct{ method, path string }{
			{"GET", "/api/admin/sessions/" + seg},
			{"POST", "/api/admin/sessions/" + seg + "/reset"},
		} {
			rec := adminDo(h, req.method, req.path, "Bearer tok", "application/json", "{}")
			var body struct{ Error string }
			_ = json.Unmarshal(rec.Body.Bytes(), &body)
			if rec.Code != http.StatusBadRequest || body.Error == "" {
				t.Errorf("%s %.80s = %d %q, want 400 with an error", req.method, req.path, rec.Code, body.Error)
			}
		}
	}
	for _, key := range []string{"v1:api:default", "v1%3Atelegram%3Atopic%3A-100%3A42"} {
		if rec := adminDo(h, "GET", "/api/admin/sessions/"+key, "Bearer tok", "", ""); rec.Code != http.StatusOK {
			t.Errorf("GET %s = %d %s, want 200", key, rec.Code, rec.Body)
		}
	}
}
