package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// Deferred delivery and idempotent replays through the real stack: the
// real store, codex app-server and fake model, the gateway and the API lane.

// leaveCutOffTurn leaves the database as a crash in the middle of a turn on
// the API lane does: the turn journaled, its message processing.
func (w *world) leaveCutOffTurn(t *testing.T, lane string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, w.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := "v1:api:" + lane
	l, err := st.EnsureLane(ctx, store.LaneKey{SessionKey: key, Platform: "api", Kind: "api", ChatID: lane})
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := st.RecordInbound(ctx, store.Inbound{Platform: "api", MessageID: "crashed-1", SessionKey: key,
		SenderID: "tester", Text: "a long job"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetInboundState(ctx, id, store.InboundProcessing); err != nil {
		t.Fatal(err)
	}
	if err := st.JournalTurn(ctx, store.JournalEntry{SessionKey: key, Generation: l.Generation, InboundID: id,
		Text: "a long job"}); err != nil {
		t.Fatal(err)
	}
}

// waitLogged polls until the instance logged event at least n times with
// the field key=value (the platform's deferrals have no other signal).
func (in *instance) waitLogged(t *testing.T, event, key, value string, n int) {
	t.Helper()
	poll.Until(t, 20*time.Second, fmt.Sprintf("%s with %s=%s logged %d times", event, key, value, n), func() bool {
		return in.logs.FilterMessage(event).FilterField(zap.String(key, value)).Len() >= n
	})
}

func cutOffs(notices []string) int {
	n := 0
	for _, s := range notices {
		if s == gateway.CutOffNotice("a long job") { // leaveCutOffTurn's message
			n++
		}
	}
	return n
}

// rawPost posts body to lane and returns the status, header and raw body.
func (in *instance) rawPost(ctx context.Context, t *testing.T, lane, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+in.api.Addr()+"/api/lanes/"+lane+"/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// getMessage returns GET .../messages/{id}.
func (in *instance) getMessage(t *testing.T, lane, id string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get("http://" + in.api.Addr() + "/api/lanes/" + lane + "/messages/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// Two restarts in a row with no request in between: the cut-off notice is
// still owed to the lane and reaches its next request exactly once. (An older version's first restart marked it sent while the API lane held it in
// memory, and the second restart lost it.)
func TestIntegrationHeldNoticeSurvivesTwoRestarts(t *testing.T) {
	w := newWorld(t)
	w.leaveCutOffTurn(t, "crashy")
	for run := 1; run <= 2; run++ {
		gw := w.start(t, gateway.Config{})
		gw.waitLogged(t, "api.notice_held", "lane", "crashy", 1) // nobody listens: deferred
		gw.stop()
	}
	gw := w.start(t, gateway.Config{})
	if r := gw.ask(t, "crashy", "hello again"); cutOffs(r.Notices) != 1 || r.Status != "completed" {
		t.Fatalf("first answer after two restarts %+v, want the cut-off notice once", r)
	}
	if r := gw.ask(t, "crashy", "and now?"); len(r.Notices) != 0 {
		t.Errorf("second answer carried notices %q, want none", r.Notices)
	}

	// The answer to a message with an id is recorded: a repeat gets the
	// same bytes, marked replayed, and GET shows it.
	ctx := context.Background()
	const msg = `{"text":"remember KIWI-3","user":"tester","id":"kiwi-1"}`
	code, hdr, first := gw.rawPost(ctx, t, "crashy", msg)
	if code != 200 || hdr.Get("Idempotent-Replayed") != "" || !strings.Contains(first, "KIWI-3") {
		t.Fatalf("first post %d %v %s", code, hdr, first)
	}
	turns := len(w.model.Requests())
	code, hdr, again := gw.rawPost(ctx, t, "crashy", msg)
	if code != 200 || hdr.Get("Idempotent-Replayed") != "true" || again != first {
		t.Errorf("repeat %d %v\n%s\nwant the original\n%s", code, hdr, again, first)
	}
	if n := len(w.model.Requests()); n != turns {
		t.Errorf("the repeat reached the model (%d requests, want %d)", n, turns)
	}
	code, got := gw.getMessage(t, "crashy", "kiwi-1")
	if resp, _ := got["response"].(map[string]any); code != 200 || got["state"] != "done" || !strings.Contains(resp["reply"].(string), "KIWI-3") {
		t.Errorf("GET = %d %v", code, got)
	}
}

// A notice whose carrying response was never written (the client went
// away) goes back to the lane and comes with the next request; the answer
// the client missed is recorded when it arrives, for GET and a replay.
func TestIntegrationAbandonedResponseHandsNoticeBack(t *testing.T) {
	w := newWorld(t)
	w.leaveCutOffTurn(t, "lane")
	gw := w.start(t, gateway.Config{})
	gw.waitLogged(t, "api.notice_held", "lane", "lane", 1)
	w.model.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), "hang please") {
			return codextest.Reply{HangBeforeHeaders: true}
		}
		return codextest.DefaultReply(req)
	})
	before := len(w.model.Requests())
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+gw.api.Addr()+"/api/lanes/lane/messages",
			strings.NewReader(`{"text":"hang please","user":"tester","id":"hang-1"}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if _, err := w.model.WaitRequests(wctx, before+1); err != nil {
		t.Fatal(err)
	}
	// Held at start-up, then again once the open request took it.
	gw.waitLogged(t, "outbox.held", "lane", "v1:api:lane", 2)
	cancel()
	<-gone
	gw.waitLogged(t, "api.notice_held", "lane", "lane", 2) // handed back: nobody listens again

	if r := gw.ask(t, "lane", "/status"); cutOffs(r.Notices) != 1 {
		t.Errorf("next request's notices %q, want the cut-off notice once", r.Notices)
	}
	if r := gw.ask(t, "lane", "/stop"); !strings.Contains(r.Reply, "Stopping") {
		t.Fatalf("/stop answered %+v", r)
	}
	// The stopped turn's answer reaches nobody, but is recorded.
	var got map[string]any
	code := 0
	if !poll.Wait(20*time.Second, nil, func() bool {
		code, got = gw.getMessage(t, "lane", "hang-1")
		return code != 200 || got["response"] != nil
	}) || code != 200 {
		t.Fatalf("GET hang-1 = %d %v, want its answer recorded", code, got)
	}
	code, hdr, body := gw.rawPost(context.Background(), t, "lane", `{"text":"hang please","user":"tester","id":"hang-1"}`)
	if code != 200 || hdr.Get("Idempotent-Replayed") != "true" || !strings.Contains(body, `"status":"interrupted"`) {
		t.Errorf("replay of the abandoned message = %d %v %s", code, hdr, body)
	}
}
