package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

const secret = "s3cret-hmac-key-never-shown"

// fakeGateway records triggers and, like the gateway, runs an ID once.
type fakeGateway struct {
	mu    sync.Mutex
	calls []gateway.Trigger // every Trigger call
	ran   []gateway.Trigger // the ones that were not duplicates
	ids   map[string]int64
	err   error // returned by every call when set
}

func (f *fakeGateway) Trigger(_ context.Context, t gateway.Trigger) (int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, t)
	if f.err != nil {
		return 0, false, f.err
	}
	if f.ids == nil {
		f.ids = map[string]int64{}
	}
	if id, ok := f.ids[t.ID]; ok {
		return id, true, nil
	}
	f.ids[t.ID] = int64(100 + len(f.ids))
	f.ran = append(f.ran, t)
	return f.ids[t.ID], false, nil
}

func (f *fakeGateway) counts() (calls, ran int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls), len(f.ran)
}

// countingObserver records the counted outcomes.
type countingObserver struct {
	mu  sync.Mutex
	got []string
}

func (o *countingObserver) WebhookDelivery(hook, outcome string) {
	o.mu.Lock()
	o.got = append(o.got, hook+"/"+outcome)
	o.mu.Unlock()
}

func (o *countingObserver) outcomes() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got...)
}

type harness struct {
	srv   *Server
	gw    *fakeGateway
	obs   *countingObserver
	logs  *observer.ObservedLogs
	clock *testClock
	ids   int // deliveries signed by next
}

// testClock is the server's clock: the tests move it.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// openStore is a real SQLite store, the Replays the daemon passes.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "gatewayd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func hook(t *testing.T, name, lane, tmpl string) Hook {
	t.Helper()
	tp, err := config.ParseHookTemplate(name, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return Hook{Name: name, Secret: secret, Lane: lane, Template: tp}
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	h := &harness{gw: &fakeGateway{}, obs: &countingObserver{}, logs: logs,
		clock: &testClock{t: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)}}
	cfg := Config{
		Listen: "127.0.0.1:0",
		Hooks: []Hook{
			hook(t, "ci", "v1:api:hooks", "Build {{.build}} failed"),
			hook(t, "GitHub", "v1:telegram:dm:42", `{{.action}} {{.pull_request.title}}`),
			hook(t, "funcs", "v1:api:hooks", `{{truncate .n .text}}`),
			hook(t, "blank", "v1:api:hooks", `{{if .x}}x{{end}}  `),
		},
		Triggerer: h.gw, Replays: openStore(t), Observer: h.obs, Logger: zap.New(core), Now: h.clock.Now,
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	t.Cleanup(func() { h.checkNoSecret(t) })
	return h
}

// sign is GitHub's signature of body with the hooks' secret.
func sign(body string) string {
	return signWith(secret, body)
}

// signed is gatewayd's headers for body as delivery id, timestamped now.
func (h *harness) signed(body, id string) map[string]string {
	return signedAt(secret, h.clock.Now(), id, body)
}

// next is signed with a delivery id of its own.
func (h *harness) next(body string) map[string]string {
	h.ids++
	return h.signed(body, fmt.Sprint("d", h.ids))
}

func signedAt(key string, at time.Time, id, body string) map[string]string {
	ts := strconv.FormatInt(at.Unix(), 10)
	return map[string]string{HeaderSignature: Sign(key, ts, id, []byte(body)), HeaderTimestamp: ts, HeaderDelivery: id}
}

// github is GitHub's headers for body, with delivery id id when not "".
func github(body, id string) map[string]string {
	hdr := map[string]string{HeaderGitHubSignature: sign(body)}
	if id != "" {
		hdr[HeaderGitHubDelivery] = id
	}
	return hdr
}

// unframe checks that text is framed as outside data from hook and
// returns what the frame holds.
func unframe(t *testing.T, hook, text string) string {
	t.Helper()
	head, rest, ok := strings.Cut(text, "\n<<<WEBHOOK DATA ")
	if !ok || !strings.HasPrefix(head, FramePreamble(hook)) {
		t.Fatalf("text %q is not framed as hook %s's data", text, hook)
	}
	token, rest, _ := strings.Cut(rest, ">>>\n")
	data, ok := strings.CutSuffix(rest, "\n<<<END WEBHOOK DATA "+token+">>>")
	if !ok || !strings.Contains(head, token) {
		t.Fatalf("text %q does not end its frame", text)
	}
	return data
}

func signWith(key, body string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// do posts body to path with headers; it returns the status and the
// decoded JSON answer.
func (h *harness) do(t *testing.T, method, path, body string, hdr map[string]string) (int, map[string]any, http.Header) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, req)
	raw := rec.Body.String()
	if strings.Contains(raw, secret) {
		t.Errorf("the secret is in the answer %q", raw)
	}
	var ans map[string]any
	if err := json.Unmarshal([]byte(raw), &ans); err != nil {
		t.Errorf("answer %q is not JSON: %v", raw, err)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	return rec.Code, ans, rec.Header()
}

// checkNoSecret: no log entry, message or field, holds the secret.
func (h *harness) checkNoSecret(t *testing.T) {
	for _, e := range h.logs.All() {
		if s := fmt.Sprint(e.Message, e.ContextMap()); strings.Contains(s, secret) {
			t.Errorf("the secret is in the log entry %s", s)
		}
	}
}

func TestAcceptedWithEitherSignature(t *testing.T) {
	h := newHarness(t, nil)
	for i, hdr := range []map[string]string{github(`{"build": 42}`, "d0"), h.signed(`{"build": 43}`, "d1")} {
		code, ans, _ := h.do(t, "POST", "/hooks/ci", fmt.Sprintf(`{"build": %d}`, 42+i), hdr)
		if code != http.StatusAccepted || ans["duplicate"] != false || ans["inbound_id"] != float64(100+i) {
			t.Fatalf("delivery %d: %d %v, want 202 with the inbound id", i, code, ans)
		}
	}
	want := gateway.Trigger{Lane: "v1:api:hooks", ID: "hook:ci:d0", Origin: "🪝 ci", SenderID: "hook:ci", SenderName: "webhook ci"}
	got := h.gw.ran[0]
	if text := unframe(t, "ci", got.Text); text != "Build 42 failed" {
		t.Errorf("framed text %q", text)
	}
	if got.Text = ""; got != want {
		t.Errorf("trigger %+v,\n want %+v", got, want)
	}
	if got := h.gw.ran[1].ID; got != "hook:ci:d1" {
		t.Errorf("second trigger id %q", got)
	}
	if got := h.obs.outcomes(); strings.Join(got, " ") != "ci/accepted ci/accepted" {
		t.Errorf("outcomes %v", got)
	}
	if n := h.logs.FilterMessage("webhooks.accepted").Len(); n != 2 {
		t.Errorf("webhooks.accepted logged %d times", n)
	}
}

// GitHub's own headers, and a hook named with capitals: the name in the
// URL is matched ignoring case, and the trigger uses the configured one.
func TestGitHubDelivery(t *testing.T) {
	h := newHarness(t, nil)
	body := `{"action": "opened", "pull_request": {"title": "Fix it"}}`
	hdr := github(body, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	hdr[HeaderGitHubEvent] = "pull_request"
	code, ans, _ := h.do(t, "POST", "/hooks/github", body, hdr)
	if code != http.StatusAccepted {
		t.Fatalf("%d %v", code, ans)
	}
	got := h.gw.ran[0]
	if got.ID != "hook:GitHub:72d3162e-cc78-11e3-81ab-4c9367dc0958" || unframe(t, "GitHub", got.Text) != "opened Fix it" || got.Lane != "v1:telegram:dm:42" ||
		got.Origin != "🪝 GitHub" {
		t.Errorf("trigger %+v", got)
	}
}

func TestSignatureRefusals(t *testing.T) {
	body := `{"build": 42}`
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC) // the harness's clock
	ts := strconv.FormatInt(now.Unix(), 10)
	with := func(hdr map[string]string, k, v string) map[string]string {
		hdr[k] = v
		if v == "" {
			delete(hdr, k)
		}
		return hdr
	}
	good := func() map[string]string { return signedAt(secret, now, "d1", body) }
	tests := []struct {
		name   string
		hdr    map[string]string
		detail string
	}{
		{"missing", nil, "missing"},
		{"wrong secret", map[string]string{HeaderGitHubSignature: signWith("other", body)}, "mismatch"},
		{"gatewayd's, wrong secret", signedAt("other", now, "d1", body), "mismatch"},
		{"gatewayd's of another body", with(good(), HeaderSignature, Sign(secret, ts, "d1", []byte(`{"build": 43}`))), "mismatch"},
		{"gatewayd's over the body alone", with(good(), HeaderSignature, sign(body)), "mismatch"},
		{"gatewayd's with another delivery id", with(good(), HeaderDelivery, "d2"), "mismatch"},
		{"gatewayd's with another timestamp", with(good(), HeaderTimestamp, strconv.FormatInt(now.Unix()-1, 10)), "mismatch"},
		{"gatewayd's without a timestamp", with(good(), HeaderTimestamp, ""), "missing X-Gatewayd-Timestamp or X-Gatewayd-Delivery"},
		{"gatewayd's without a delivery id", with(good(), HeaderDelivery, ""), "missing X-Gatewayd-Timestamp or X-Gatewayd-Delivery"},
		// TIMESTAMP.a.2.3 would also be the id "a.2" and the body "3".
		{"gatewayd's id with a dot", signedAt(secret, now, "a.2", "3"), "malformed X-Gatewayd-Delivery (1-128 of A-Z a-z 0-9 _ - :)"},
		{"gatewayd's id too long", signedAt(secret, now, strings.Repeat("y", 129), body), "malformed X-Gatewayd-Delivery (1-128 of A-Z a-z 0-9 _ - :)"},
		{"no prefix", with(good(), HeaderSignature, strings.TrimPrefix(good()[HeaderSignature], "sha256=")), "malformed"},
		{"sha1", map[string]string{"X-Hub-Signature": "sha1=" + strings.Repeat("0", 40)}, "missing"},
		{"not hex", map[string]string{HeaderGitHubSignature: "sha256=zz"}, "malformed"},
		{"short", map[string]string{HeaderGitHubSignature: sign(body)[:20]}, "malformed"},
		{"one of two wrong", with(good(), HeaderGitHubSignature, signWith("other", body)), "mismatch"},
		{"the secret itself", map[string]string{HeaderGitHubSignature: "sha256=" + secret}, "malformed"},
		{"ping unsigned", map[string]string{HeaderGitHubEvent: "ping"}, "missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			code, ans, _ := h.do(t, "POST", "/hooks/ci", body, tc.hdr)
			if code != http.StatusUnauthorized || ans["error"] != unauthorized {
				t.Errorf("%d %v, want 401 %q", code, ans, unauthorized)
			}
			if calls, _ := h.gw.counts(); calls != 0 {
				t.Errorf("the gateway was called %d times", calls)
			}
			refused := h.logs.FilterMessage("webhooks.refused").All()
			if len(refused) != 1 || refused[0].ContextMap()["reason"] != "signature" || refused[0].ContextMap()["detail"] != tc.detail {
				t.Errorf("refusal log %v", refused)
			}
			if got := h.obs.outcomes(); len(got) != 1 || got[0] != "ci/signature" {
				t.Errorf("outcomes %v", got)
			}
		})
	}
}

// Paths that are not /hooks/NAME are 404; a method other than POST is 405
// for every name, known or not, so neither tells which hooks exist.
func TestUnknownPathsAndMethods(t *testing.T) {
	h := newHarness(t, nil)
	body := `{"build": 42}`
	for _, path := range []string{"/", "/hooks/", "/hooks/ci/x", "/healthz"} {
		if code, _, _ := h.do(t, "POST", path, body, h.next(body)); code != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", path, code)
		}
	}
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		for _, path := range []string{"/hooks/ci", "/hooks/nope"} {
			code, _, hdr := h.do(t, m, path, body, h.next(body))
			if code != http.StatusMethodNotAllowed || hdr.Get("Allow") != "POST" {
				t.Errorf("%s %s: %d Allow %q, want 405 POST", m, path, code, hdr.Get("Allow"))
			}
		}
	}
	if calls, _ := h.gw.counts(); calls != 0 {
		t.Errorf("the gateway was called %d times", calls)
	}
	if got := h.obs.outcomes(); len(got) != 0 {
		t.Errorf("outcomes %v", got)
	}
}

func TestBodyLimit(t *testing.T) {
	h := newHarness(t, nil)
	big := `{"build": "` + strings.Repeat("x", DefaultMaxBodyBytes) + `"}`
	code, ans, _ := h.do(t, "POST", "/hooks/ci", big, github(big, ""))
	if code != http.StatusRequestEntityTooLarge || ans["error"] != "the body is larger than 1048576 bytes" {
		t.Errorf("over 1 MiB: %d %v", code, ans)
	}
	// Without a Content-Length (chunked) the read stops at the limit.
	req := httptest.NewRequest("POST", "/hooks/ci", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set(HeaderGitHubSignature, sign(big))
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked over 1 MiB: %d %s", rec.Code, rec.Body)
	}
	if calls, _ := h.gw.counts(); calls != 0 {
		t.Errorf("the gateway was called %d times", calls)
	}
	// Exactly at the limit is fine.
	at := `{"build": "` + strings.Repeat("x", DefaultMaxBodyBytes-len(`{"build": ""}`)) + `"}`
	if code, ans, _ := h.do(t, "POST", "/hooks/ci", at, h.next(at)); code != http.StatusAccepted {
		t.Errorf("at 1 MiB: %d %v", code, ans)
	}
	if got := h.obs.outcomes(); strings.Join(got, " ") != "ci/too_large ci/too_large ci/accepted" {
		t.Errorf("outcomes %v", got)
	}
}

func TestBadBodies(t *testing.T) {
	tests := []struct {
		name, body, contentType, want string
	}{
		{"not JSON", "build=42", "application/json", "the body is not JSON: invalid character 'b' looking for beginning of value"},
		{"form encoded", "payload=%7B%7D", "application/x-www-form-urlencoded",
			`the body is not JSON: invalid character 'p' looking for beginning of value (Content-Type is "application/x-www-form-urlencoded": send application/json; on GitHub set the webhook's content type to application/json)`},
		{"empty", "", "application/json", "the body is not JSON: empty body"},
		{"two values", `{"build": 1} {"build": 2}`, "application/json", "the body is not JSON: data after the JSON value"},
		{"truncated", `{"build": 1`, "application/json", "the body is not JSON: unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			hdr := h.next(tc.body)
			hdr["Content-Type"] = tc.contentType
			code, ans, _ := h.do(t, "POST", "/hooks/ci", tc.body, hdr)
			if code != http.StatusBadRequest || ans["error"] != tc.want {
				t.Errorf("%d %v, want 400 %q", code, ans, tc.want)
			}
			if calls, _ := h.gw.counts(); calls != 0 {
				t.Errorf("the gateway was called %d times", calls)
			}
			if got := h.obs.outcomes(); strings.Join(got, " ") != "ci/bad_body" {
				t.Errorf("outcomes %v", got)
			}
		})
	}
}

// Any JSON value is a body; the template decides what it needs.
func TestAnyJSONValue(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Hooks = append(c.Hooks, hook(t, "list", "v1:api:hooks", `{{range .}}{{.}},{{end}}`))
	})
	body := `[1, "two", 98765432101]`
	if code, ans, _ := h.do(t, "POST", "/hooks/list", body, h.next(body)); code != http.StatusAccepted {
		t.Fatalf("%d %v", code, ans)
	}
	if got := unframe(t, "list", h.gw.ran[0].Text); got != "1,two,98765432101," {
		t.Errorf("text %q", got)
	}
}

func TestTemplateFailures(t *testing.T) {
	tests := []struct {
		name, hook, body, want string
	}{
		{"missing key", "ci", `{"other": 1}`,
			`template: ci:1:8: executing "ci" at <.build>: map has no entry for key "build"`},
		{"field of nothing", "github", `{"action": "opened", "pull_request": null}`,
			`template: GitHub:1:27: executing "GitHub" at <.pull_request.title>: nil pointer evaluating interface {}.title`},
		{"a function fails", "funcs", `{"n": -1, "text": "abc"}`,
			`template: funcs:1:2: executing "funcs" at <truncate .n .text>: error calling truncate: truncate: negative length -1`},
		{"wrong argument type", "funcs", `{"n": "x", "text": "abc"}`,
			`template: funcs:1:2: executing "funcs" at <truncate .n .text>: error calling truncate: truncate: length "x" is not a whole number`},
		{"a fraction", "funcs", `{"n": 1.5, "text": "abc"}`,
			`template: funcs:1:2: executing "funcs" at <truncate .n .text>: error calling truncate: truncate: length "1.5" is not a whole number`},
		{"renders nothing", "blank", `{"x": false}`, "the template rendered nothing for this body"},
		{"not a map", "ci", `[1]`,
			`template: ci:1:8: executing "ci" at <.build>: can't evaluate field build in type []interface {}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			code, ans, _ := h.do(t, "POST", "/hooks/"+tc.hook, tc.body, h.next(tc.body))
			if code != http.StatusUnprocessableEntity || ans["error"] != tc.want {
				t.Errorf("%d %v,\n want 422 %q", code, ans, tc.want)
			}
			if calls, _ := h.gw.counts(); calls != 0 {
				t.Errorf("the gateway was called %d times", calls)
			}
		})
	}
}

func TestTemplateOutputBounded(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Hooks = append(c.Hooks, hook(t, "loop", "v1:api:hooks", `{{range .}}{{range $}}{{json $}}{{end}}{{end}}`))
	})
	body := "[" + strings.Repeat(`"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",`, 2000) + `"x"]`
	code, ans, _ := h.do(t, "POST", "/hooks/loop", body, h.next(body))
	if code != http.StatusUnprocessableEntity || ans["error"] != "the template's output is larger than 1048576 bytes" {
		t.Errorf("%d %v", code, ans)
	}
}

func TestDuplicates(t *testing.T) {
	h := newHarness(t, nil)
	body := `{"build": 42}`
	hdr := h.signed(body, "d1")
	code, first, _ := h.do(t, "POST", "/hooks/ci", body, hdr)
	if code != http.StatusAccepted {
		t.Fatalf("first: %d %v", code, first)
	}
	code, again, _ := h.do(t, "POST", "/hooks/ci", body, hdr)
	if code != http.StatusOK || again["duplicate"] != true || again["inbound_id"] != first["inbound_id"] {
		t.Errorf("repeat: %d %v, want 200 duplicate with id %v", code, again, first["inbound_id"])
	}
	// GitHub's signature without a delivery id: the body's hash is the id,
	// so an exact resend is a duplicate, another body is not.
	plain := github(body, "")
	if code, _, _ := h.do(t, "POST", "/hooks/ci", body, plain); code != http.StatusAccepted {
		t.Errorf("no delivery id, first: %d", code)
	}
	if code, _, _ := h.do(t, "POST", "/hooks/ci", body, plain); code != http.StatusOK {
		t.Errorf("no delivery id, resend: %d, want 200", code)
	}
	sum := sha256.Sum256([]byte(body))
	if got, want := h.gw.ran[1].ID, "hook:ci:"+hex.EncodeToString(sum[:]); got != want {
		t.Errorf("id without a delivery header %q, want %q", got, want)
	}
	other := `{"build": 43}`
	if code, _, _ := h.do(t, "POST", "/hooks/ci", other, github(other, "")); code != http.StatusAccepted {
		t.Errorf("another body: %d", code)
	}
	// A GitHub delivery id too long, or with spaces, is hashed.
	long := strings.Repeat("y", 500)
	if code, _, _ := h.do(t, "POST", "/hooks/ci", `{"build": 44}`, github(`{"build": 44}`, long)); code != http.StatusAccepted {
		t.Errorf("long id: %d", code)
	}
	if id := h.gw.ran[3].ID; len(id) != len("hook:ci:")+64 {
		t.Errorf("long delivery id became %q", id)
	}
	if _, ran := h.gw.counts(); ran != 4 {
		t.Errorf("%d triggers ran, want 4", ran)
	}
	if got := strings.Join(h.obs.outcomes(), " "); got != "ci/accepted ci/duplicate ci/accepted ci/duplicate ci/accepted ci/accepted" {
		t.Errorf("outcomes %s", got)
	}
}

func TestGatewayErrors(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		code    int
		want    string
		outcome string
	}{
		{"unknown lane", fmt.Errorf("%w: %q", gateway.ErrUnknownLane, "v1:api:hooks"), http.StatusNotFound,
			"lane v1:api:hooks is unknown: gatewayd has not seen it yet (a chat lane exists once someone talked to gatewayd there; an API lane v1:api:NAME needs nothing)",
			"lane"},
		{"shutting down", gateway.ErrShuttingDown, http.StatusServiceUnavailable, "gatewayd is shutting down; deliver again later", "shutting_down"},
		{"database", errors.New("store: disk I/O error at /var/lib/gatewayd"), http.StatusInternalServerError,
			"internal error: the delivery was not recorded; deliver again later", "error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.gw.err = tc.err
			body := `{"build": 42}`
			code, ans, hdr := h.do(t, "POST", "/hooks/ci", body, h.next(body))
			if code != tc.code || ans["error"] != tc.want {
				t.Errorf("%d %v, want %d %q", code, ans, tc.code, tc.want)
			}
			if tc.code == http.StatusServiceUnavailable && hdr.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if got := h.obs.outcomes(); len(got) != 1 || got[0] != "ci/"+tc.outcome {
				t.Errorf("outcomes %v", got)
			}
			if tc.outcome == "error" {
				logged := h.logs.FilterMessage("webhooks.trigger_failed").All()
				if len(logged) != 1 || !strings.Contains(fmt.Sprint(logged[0].ContextMap()["error"]), "disk I/O") {
					t.Errorf("the error is not logged: %v", logged)
				}
			}
		})
	}
}

func TestPing(t *testing.T) {
	h := newHarness(t, nil)
	body := `{"zen": "Keep it logically awesome.", "hook_id": 1}`
	hdr := github(body, "p1")
	hdr[HeaderGitHubEvent] = "ping"
	code, ans, _ := h.do(t, "POST", "/hooks/GITHUB", body, hdr)
	if code != http.StatusOK || ans["pong"] != true {
		t.Errorf("ping: %d %v", code, ans)
	}
	if calls, _ := h.gw.counts(); calls != 0 {
		t.Errorf("the gateway was called %d times", calls)
	}
	if got := h.obs.outcomes(); strings.Join(got, " ") != "GitHub/ping" {
		t.Errorf("outcomes %v", got)
	}
}

func TestNewChecksHooks(t *testing.T) {
	tp, _ := config.ParseHookTemplate("x", "x")
	good := Hook{Name: "a", Secret: "s", Lane: "v1:api:a", Template: tp}
	tests := []struct {
		name  string
		hooks []Hook
		want  string
	}{
		{"twice", []Hook{good, {Name: "A", Secret: "s", Lane: "v1:api:a", Template: tp}}, `webhooks: hook "A" given twice (names are matched ignoring case)`},
		{"no secret", []Hook{{Name: "a", Lane: "l", Template: tp}}, `webhooks: hook "a" has no secret`},
		{"no lane", []Hook{{Name: "a", Secret: "s", Template: tp}}, `webhooks: hook "a" has no lane`},
		{"no template", []Hook{{Name: "a", Secret: "s", Lane: "l"}}, `webhooks: hook "a" has no template`},
		{"no name", []Hook{{Secret: "s", Lane: "l", Template: tp}}, `webhooks: a hook without a name`},
	}
	for _, tc := range tests {
		if _, err := New(Config{Hooks: tc.hooks, Triggerer: &fakeGateway{}, Replays: openStore(t)}); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(Config{Hooks: []Hook{good}, Replays: openStore(t)}); err == nil {
		t.Error("New without a Triggerer")
	}
	if _, err := New(Config{Hooks: []Hook{good}, Triggerer: &fakeGateway{}}); err == nil {
		t.Error("New without Replays")
	}
}

func TestHooksFrom(t *testing.T) {
	tp, _ := config.ParseHookTemplate("x", "x")
	got := HooksFrom(map[string]config.Hook{
		"b": {Name: "b", Secret: "sb", Lane: "v1:api:b", Template: tp},
		"a": {Name: "a", Secret: "sa", Lane: "v1:api:a", Template: tp, SecretFile: "/f", MaxPerMinute: 7},
	})
	if len(got) != 2 || got[0] != (Hook{Name: "a", Secret: "sa", Lane: "v1:api:a", Template: tp, MaxPerMinute: 7}) || got[1].Name != "b" {
		t.Errorf("HooksFrom = %v", got)
	}
}

// The real listener: bind, serve, answer, shut down; a taken address
// fails Listen naming it.
func TestListenServeShutdown(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.srv.Serve(); err == nil {
		t.Error("Serve before Listen")
	}
	if err := h.srv.Listen(); err != nil {
		t.Fatal(err)
	}
	addr := h.srv.Addr()
	if err := h.srv.Serve(); err != nil {
		t.Fatal(err)
	}
	body := `{"build": 7}`
	req, _ := http.NewRequest("POST", "http://"+addr+"/hooks/ci", strings.NewReader(body))
	for k, v := range h.next(body) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(raw), `"inbound_id":100`) {
		t.Errorf("%d %s", resp.StatusCode, raw)
	}

	other, err := New(Config{Listen: addr, Triggerer: &fakeGateway{}, Replays: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Listen(); err == nil || !strings.Contains(err.Error(), "webhooks: listen on "+addr) {
		t.Errorf("second Listen on %s: %v", addr, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("still listening after Shutdown")
	}
}

// Shutdown before Serve closes the bound listener.
func TestShutdownBeforeServe(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.srv.Listen(); err != nil {
		t.Fatal(err)
	}
	addr := h.srv.Addr()
	if err := h.srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("still listening after Shutdown")
	}
	if err := h.srv.Serve(); err == nil {
		t.Error("Serve after Shutdown")
	}
}

// Shutdown waits for a delivery in flight, which is then answered.
func TestShutdownWaitsForADelivery(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	gw := &blockingGateway{entered: entered, release: release}
	srv, err := New(Config{Listen: "127.0.0.1:0", Hooks: []Hook{hook(t, "ci", "v1:api:hooks", "b{{.build}}")}, Triggerer: gw,
		Replays: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(); err != nil {
		t.Fatal(err)
	}
	body := `{"build": 1}`
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+srv.Addr()+"/hooks/ci", strings.NewReader(body))
		for k, v := range signedAt(secret, time.Now(), "d1", body) {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Shutdown(context.Background()) }()
	select {
	case <-stopped:
		t.Fatal("Shutdown returned with a delivery in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != http.StatusAccepted {
		t.Errorf("the delivery in flight got %d", code)
	}
}

type blockingGateway struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingGateway) Trigger(context.Context, gateway.Trigger) (int64, bool, error) {
	close(b.entered)
	<-b.release
	return 1, false, nil
}
