package webconsole_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/webconsole"
)

// fakeLive is the gateway's live lane state, set by the test.
type fakeLive map[string]gateway.LaneState

func (f fakeLive) LaneState(key string) gateway.LaneState { return f[key] }

// consoleWorld is a real store behind the console routes, served through the
// API platform's handler so the Host/Origin guard runs as in the daemon.
type consoleWorld struct {
	st   *store.Store
	live fakeLive
	srv  *httptest.Server
}

const (
	threadKey = "v1:discord:thread:a.b" // a lane of another platform, named by its full key
	topicKey  = "v1:telegram:topic:-100:42"
)

func newConsoleWorld(t testing.TB, token string) *consoleWorld {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "gatewayd.db"), store.Options{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, k := range []store.LaneKey{
		{SessionKey: threadKey, Platform: "discord", Kind: "thread", TopicID: "a.b"},
		{SessionKey: topicKey, Platform: "telegram", Kind: "topic", ChatID: "-100", TopicID: "42"},
		{SessionKey: "v1:api:default", Platform: "api", Kind: "api", ChatID: "default"},
	} {
		if _, err := st.EnsureLane(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	w := &consoleWorld{st: st, live: fakeLive{}}
	c := webconsole.NewConsole(webconsole.ConsoleConfig{Store: st, Live: w.live, Token: token, Dirs: webconsole.Workdirs{Fallback: "/srv/work"}})
	p := api.New(api.Config{Listen: "127.0.0.1:0", Token: token, Answers: st, Handlers: c.Routes()})
	w.srv = httptest.NewServer(p.Handler())
	t.Cleanup(w.srv.Close)
	return w
}

// commit stores one completed turn in the lane's current session.
func (w *consoleWorld) commit(t *testing.T, key, turnID, user, assistant string, usage store.UsageRecord) {
	t.Helper()
	ctx := context.Background()
	l, err := w.st.Lane(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.st.BindThread(ctx, key, l.Generation, "thr-"+turnID); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.CommitTurn(ctx, store.CompletedTurn{
		SessionKey: key, Generation: l.Generation, SessionID: l.SessionID, ThreadID: "thr-" + turnID,
		TurnID: turnID, UserText: user, AssistantText: assistant, Status: "completed", Usage: usage,
	}); err != nil {
		t.Fatal(err)
	}
}

// get requests path (already escaped as a client would) and decodes the
// JSON body into out, returning the status.
func (w *consoleWorld) get(t *testing.T, path string, hdr map[string]string, out any) int {
	t.Helper()
	return w.do(t, http.MethodGet, path, hdr, out)
}

func (w *consoleWorld) do(t *testing.T, method, path string, hdr map[string]string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, w.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := w.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s: Content-Type %q, want JSON", method, path, ct)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Errorf("%s %s: decode: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

var consolePaths = []string{
	"/api/lanes",
	"/api/lanes/default",
	"/api/lanes/default/transcript",
	"/api/search?q=hello",
}

// Every console route needs the bearer token when api.token is set.
func TestConsoleRoutesNeedTheToken(t *testing.T) {
	w := newConsoleWorld(t, "s3cret")
	for _, path := range consolePaths {
		for name, hdr := range map[string]map[string]string{
			"missing":     nil,
			"wrong":       {"Authorization": "Bearer nope"},
			"not bearer":  {"Authorization": "Basic s3cret"},
			"token alone": {"Authorization": "s3cret"},
		} {
			var body map[string]string
			if code := w.get(t, path, hdr, &body); code != http.StatusUnauthorized || body["error"] == "" {
				t.Errorf("%s, token %s: %d %v, want 401 with an error", path, name, code, body)
			}
		}
		if code := w.get(t, path, map[string]string{"Authorization": "Bearer s3cret"}, nil); code != http.StatusOK {
			t.Errorf("%s with the token: %d, want 200", path, code)
		}
	}
}

// The Host and Origin guard of the API listener runs before every console
// route, token or not.
func TestConsoleRoutesAreBehindTheHostAndOriginGuard(t *testing.T) {
	w := newConsoleWorld(t, "")
	refused := map[string]map[string]string{
		"rebinding Host":      {"Host": "evil.example:8787"},
		"foreign Origin":      {"Origin": "http://evil.example"},
		"cross-site no-cors":  {"Sec-Fetch-Site": "cross-site"},
		"same host, bad port": {"Origin": "http://127.0.0.1:1"},
	}
	for _, path := range consolePaths {
		for name, hdr := range refused {
			var body map[string]string
			if code := w.get(t, path, hdr, &body); code != http.StatusForbidden || body["error"] == "" {
				t.Errorf("%s, %s: %d %v, want 403 with an error", path, name, code, body)
			}
		}
		sameOrigin := map[string]string{"Origin": w.srv.URL}
		if code := w.get(t, path, sameOrigin, nil); code != http.StatusOK {
			t.Errorf("%s from the console's own origin: %d, want 200", path, code)
		}
	}
}

func TestConsoleRoutesRefuseOtherMethods(t *testing.T) {
	w := newConsoleWorld(t, "")
	for _, path := range consolePaths {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			var body map[string]string
			if code := w.do(t, method, path, nil, &body); code != http.StatusMethodNotAllowed || !strings.Contains(body["error"], "use GET") {
				t.Errorf("%s %s: %d %v, want 405 saying to use GET", method, path, code, body)
			}
		}
	}
}

type lanesBody struct {
	Lanes []struct {
		Key, Platform, Kind, Binding, Title, Model, Effort, Verbose, Directory string
		ThreadID                                                               string `json:"thread_id"`
		Turns                                                                  int64
		Queued                                                                 int
		Running                                                                bool
	} `json:"lanes"`
}

func (b lanesBody) keys() string {
	var keys []string
	for _, l := range b.Lanes {
		keys = append(keys, l.Key)
	}
	return strings.Join(keys, ",")
}

func TestConsoleListsLanesWithLiveStateAndFilters(t *testing.T) {
	w := newConsoleWorld(t, "")
	ctx := context.Background()
	w.commit(t, topicKey, "t1", "hello topic", "hi", store.UsageRecord{})
	if err := w.st.SetMeta(ctx, topicKey, map[string]string{"title": "Release planning"}); err != nil {
		t.Fatal(err)
	}
	for opt, v := range map[store.LaneOption]string{store.OptionModel: "gpt-test", store.OptionEffort: "high", store.OptionVerbose: "full"} {
		if err := w.st.SetLaneOption(ctx, topicKey, opt, v); err != nil {
			t.Fatal(err)
		}
	}
	w.live[topicKey] = gateway.LaneState{Queued: 2, Running: true}

	var all lanesBody
	if code := w.get(t, "/api/lanes", nil, &all); code != http.StatusOK {
		t.Fatalf("GET /api/lanes: %d", code)
	}
	if got := all.keys(); got != topicKey+",v1:api:default,"+threadKey {
		t.Errorf("lanes = %s, want the committed lane first, then by activity", got)
	}
	top := all.Lanes[0]
	if top.Title != "Release planning" || top.Model != "gpt-test" || top.Effort != "high" || top.Verbose != "full" || top.Turns != 1 ||
		top.Queued != 2 || !top.Running || top.Binding != "pending" || top.ThreadID != "thr-t1" ||
		top.Platform != "telegram" || top.Kind != "topic" || top.Directory != "/srv/work" {
		t.Errorf("telegram lane = %+v", top)
	}
	if idle := all.Lanes[1]; idle.Queued != 0 || idle.Running || idle.Binding != "none" {
		t.Errorf("idle API lane = %+v", idle)
	}

	filters := []struct{ query, want string }{
		{"?limit=1", topicKey},
		{"?platform=api", "v1:api:default"},
		{"?platform=matrix", ""},
		{"?q=PLANNING", topicKey},
		{"?q=" + url.QueryEscape("a.b"), threadKey},
		{"?q=thread&platform=discord", threadKey},
		{"?q=thread&platform=api", ""},
	}
	for _, f := range filters {
		var got lanesBody
		if code := w.get(t, "/api/lanes"+f.query, nil, &got); code != http.StatusOK || got.keys() != f.want {
			t.Errorf("/api/lanes%s: %d %q, want %q", f.query, code, got.keys(), f.want)
		}
		if got.Lanes == nil {
			t.Errorf("/api/lanes%s: lanes is null, want a list", f.query)
		}
	}
	for _, bad := range []string{"0", "-1", "1001", "ten", "1.5"} {
		var body map[string]string
		if code := w.get(t, "/api/lanes?limit="+bad, nil, &body); code != http.StatusBadRequest || !strings.Contains(body["error"], "limit") {
			t.Errorf("limit=%s: %d %v, want 400 about the limit", bad, code, body)
		}
	}
}

type laneBody struct {
	Key      string `json:"key"`
	Running  bool   `json:"running"`
	LastTurn *struct {
		TurnID        string `json:"turn_id"`
		TurnTokens    int64  `json:"turn_tokens"`
		ContextTokens int64  `json:"context_tokens"`
		ContextWindow int64  `json:"context_window"`
	} `json:"last_turn"`
	Usage *struct {
		Today, Month struct {
			Turns, Tokens int64
		}
	} `json:"usage"`
	Error string `json:"error"`
}

// {lane} is an API lane name or a session key, with its ':' raw or
// escaped.
func TestConsoleShowsOneLaneByNameOrKey(t *testing.T) {
	w := newConsoleWorld(t, "")
	w.commit(t, "v1:api:default", "t1", "q", "a", store.UsageRecord{TurnTokens: 120, ContextTokens: 900, ContextWindow: 10000})
	w.live[threadKey] = gateway.LaneState{Running: true}
	found := []struct{ path, key string }{
		{"/api/lanes/default", "v1:api:default"},
		{"/api/lanes/v1:api:default", "v1:api:default"},
		{"/api/lanes/" + url.PathEscape(topicKey), topicKey},
		{"/api/lanes/v1%3Atelegram%3Atopic%3A-100%3A42", topicKey},
		{"/api/lanes/" + url.PathEscape(threadKey), threadKey},
		{"/api/lanes/" + strings.ReplaceAll(threadKey, ":", "%3A"), threadKey},
	}
	for _, f := range found {
		var got laneBody
		if code := w.get(t, f.path, nil, &got); code != http.StatusOK || got.Key != f.key {
			t.Errorf("GET %s: %d %+v, want lane %s", f.path, code, got, f.key)
		}
	}

	var api laneBody
	w.get(t, "/api/lanes/default", nil, &api)
	if api.LastTurn == nil || api.LastTurn.TurnID != "t1" || api.LastTurn.TurnTokens != 120 ||
		api.LastTurn.ContextTokens != 900 || api.LastTurn.ContextWindow != 10000 {
		t.Errorf("last turn = %+v, want t1's usage", api.LastTurn)
	}
	if u := api.Usage; u == nil || u.Today.Turns != 1 || u.Today.Tokens != 120 || u.Month.Tokens != 120 {
		t.Errorf("usage = %+v, want t1's 120 tokens today and this month", u)
	}
	var slash laneBody
	w.get(t, "/api/lanes/v1%3Adiscord%3Athread%3Aa.b", nil, &slash)
	if !slash.Running || slash.LastTurn != nil {
		t.Errorf("discord lane = %+v, want running and no usage yet", slash)
	}

	refused := []struct {
		path string
		code int
	}{
		{"/api/lanes/nobody", http.StatusNotFound},
		{"/api/lanes/v1:telegram:dm:7", http.StatusNotFound},
		{"/api/lanes/bad%20name", http.StatusBadRequest},
		{"/api/lanes/" + strings.Repeat("x", 129), http.StatusBadRequest},
		{"/api/lanes/v2:api:default", http.StatusBadRequest},
		{"/api/lanes/v1:api:a%0Ab", http.StatusBadRequest},
		{"/api/lanes/v1:" + strings.Repeat("k", 1100), http.StatusBadRequest},
	}
	for _, r := range refused {
		var got laneBody
		if code := w.get(t, r.path, nil, &got); code != r.code || got.Error == "" {
			t.Errorf("GET %.60s: %d %+v, want %d with an error", r.path, code, got, r.code)
		}
	}
}

// A {lane} that is not a lane name is refused 400 with an error that says
// so, on every console route that takes one (a crafted name
// reached the admin routes), before the store is asked.
func TestConsoleRefusesALaneSegmentThatIsNotALaneName(t *testing.T) {
	w := newConsoleWorld(t, "")
	for _, seg := range []string{
		"v1:api:..%2Fadmin%2Fsessions%2Fv1:api:B%2Freset%3F",
		"..%2Fadmin%2Fsessions",
		"v1:api:a%2Fb",
		"v1:discord:thread:a%2Fb",
		"v1:api:default%3Fx",
		"v1:api:default%23x",
		"v1:api:a%20b",
		"v1:api:",
		"v1:telegram:chat:1",
		"v1:telegram:topic:-100",
		"v1:api:default:extra",
		"v1:API:default",
	} {
		for _, path := range []string{"/api/lanes/" + seg, "/api/lanes/" + seg + "/transcript"} {
			var got struct{ Error string }
			if code := w.get(t, path, nil, &got); code != http.StatusBadRequest || !strings.Contains(got.Error, "lane") {
				t.Errorf("GET %s: %d %q, want 400 saying what a lane is", path, code, got.Error)
			}
		}
	}
}

type pageBody struct {
	Messages []struct {
		ID        int64  `json:"id"`
		SessionID int64  `json:"session_id"`
		Role      string `json:"role"`
		Text      string `json:"text"`
		TurnID    string `json:"turn_id"`
		CreatedAt string `json:"created_at"`
	} `json:"messages"`
	NextBefore *int64 `json:"next_before"`
	Error      string `json:"error"`
}

// The transcript pages newest first through both sessions of a lane (a
// /new in between), following next_before until it is null.
func TestConsoleTranscriptPagesAcrossSessions(t *testing.T) {
	w := newConsoleWorld(t, "")
	ctx := context.Background()
	w.commit(t, topicKey, "other", "elsewhere", "not this lane", store.UsageRecord{})
	w.commit(t, threadKey, "t1", "one", "first reply", store.UsageRecord{})
	w.commit(t, threadKey, "t2", "two", "second reply", store.UsageRecord{})
	if _, err := w.st.ResetLane(ctx, threadKey, "new"); err != nil {
		t.Fatal(err)
	}
	w.commit(t, threadKey, "t3", "three", "third reply", store.UsageRecord{})

	base := "/api/lanes/v1%3Adiscord%3Athread%3Aa.b/transcript?limit=4"
	var texts []string
	sessions := map[int64]bool{}
	path := base
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("next_before never became null")
		}
		var page pageBody
		if code := w.get(t, path, nil, &page); code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, page.Error)
		}
		for _, m := range page.Messages {
			texts = append(texts, m.Role+":"+m.Text)
			sessions[m.SessionID] = true
			if m.ID == 0 || m.TurnID == "" || m.CreatedAt == "" {
				t.Errorf("message lacks fields: %+v", m)
			}
		}
		if page.NextBefore == nil {
			if len(page.Messages) != 2 {
				t.Errorf("last page has %d messages, want the 2 left", len(page.Messages))
			}
			break
		}
		if len(page.Messages) != 4 || *page.NextBefore != page.Messages[3].ID {
			t.Errorf("page %d: %d messages, next_before %d, want 4 and the oldest id", pages, len(page.Messages), *page.NextBefore)
		}
		path = fmt.Sprintf("%s&before=%d", base, *page.NextBefore)
	}
	want := "assistant:third reply,user:three,assistant:second reply,user:two,assistant:first reply,user:one"
	if got := strings.Join(texts, ","); got != want {
		t.Errorf("transcript\n%s\nwant\n%s", got, want)
	}
	if len(sessions) != 2 {
		t.Errorf("messages from %d sessions, want 2", len(sessions))
	}

	// A page that ends exactly at the oldest message says so.
	var exact pageBody
	w.get(t, "/api/lanes/v1%3Adiscord%3Athread%3Aa.b/transcript?limit=6", nil, &exact)
	if len(exact.Messages) != 6 || exact.NextBefore != nil {
		t.Errorf("limit=6 of 6: %d messages, next_before %v, want 6 and null", len(exact.Messages), exact.NextBefore)
	}
	var empty pageBody
	w.get(t, "/api/lanes/default/transcript", nil, &empty)
	if empty.Messages == nil || len(empty.Messages) != 0 || empty.NextBefore != nil {
		t.Errorf("empty lane: %+v, want [] and null", empty)
	}
}

func TestConsoleTranscriptRefusesBadInput(t *testing.T) {
	w := newConsoleWorld(t, "")
	tests := []struct {
		query, word string
		code        int
	}{
		{"?limit=0", "limit", http.StatusBadRequest},
		{"?limit=501", "limit", http.StatusBadRequest},
		{"?limit=x", "limit", http.StatusBadRequest},
		{"?before=0", "before", http.StatusBadRequest},
		{"?before=-5", "before", http.StatusBadRequest},
		{"?before=abc", "before", http.StatusBadRequest},
		{"?before=99999999999999999999", "before", http.StatusBadRequest},
	}
	for _, tt := range tests {
		var got pageBody
		if code := w.get(t, "/api/lanes/default/transcript"+tt.query, nil, &got); code != tt.code || !strings.Contains(got.Error, tt.word) {
			t.Errorf("%s: %d %q, want %d about %s", tt.query, code, got.Error, tt.code, tt.word)
		}
	}
	var got pageBody
	if code := w.get(t, "/api/lanes/ghost/transcript", nil, &got); code != http.StatusNotFound || !strings.Contains(got.Error, "v1:api:ghost") {
		t.Errorf("unknown lane: %d %q, want 404 naming it", code, got.Error)
	}
}

func TestConsoleSearch(t *testing.T) {
	w := newConsoleWorld(t, "")
	w.commit(t, topicKey, "t1", "where is the kiwi report", "the kiwi report is in /srv", store.UsageRecord{})
	w.commit(t, "v1:api:default", "t2", "unrelated", "nothing here", store.UsageRecord{})
	var body struct {
		Results []struct {
			Lane      string `json:"lane"`
			ID        int64  `json:"id"`
			Role      string `json:"role"`
			Text      string `json:"text"`
			CreatedAt string `json:"created_at"`
		} `json:"results"`
	}
	if code := w.get(t, "/api/search?q=KIWI+report", nil, &body); code != http.StatusOK || len(body.Results) != 2 {
		t.Fatalf("search: %d %+v, want both kiwi messages", code, body)
	}
	for _, r := range body.Results {
		if r.Lane != topicKey || r.ID == 0 || r.CreatedAt == "" || !strings.Contains(r.Text, "kiwi") {
			t.Errorf("result %+v", r)
		}
	}
	var one struct {
		Results []json.RawMessage `json:"results"`
	}
	if w.get(t, "/api/search?q=kiwi&limit=1", nil, &one); len(one.Results) != 1 {
		t.Errorf("limit=1: %d results", len(one.Results))
	}
	var none struct {
		Results []json.RawMessage `json:"results"`
	}
	if w.get(t, "/api/search?q=%22%29+OR+*", nil, &none); none.Results == nil || len(none.Results) != 0 {
		t.Errorf("FTS syntax as text: %+v, want an empty list", none)
	}
	for _, bad := range []struct{ query, word string }{
		{"", "q"}, {"?q=", "q"}, {"?q=+++", "q"}, {"?q=kiwi&limit=0", "limit"}, {"?q=kiwi&limit=9999", "limit"},
	} {
		var got map[string]string
		if code := w.get(t, "/api/search"+bad.query, nil, &got); code != http.StatusBadRequest || !strings.Contains(got["error"], bad.word) {
			t.Errorf("/api/search%s: %d %v, want 400 about %s", bad.query, code, got, bad.word)
		}
	}
}
