package codex

import (
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// oneTurnLines is what the app-server writes for one plain text turn of
// thread T (docs/codex-app-server.md §3), one JSON line each, in order.
var oneTurnLines = []string{
	`{"method":"thread/status/changed","params":{"threadId":"T","status":{"type":"active","activeFlags":[]}}}`,
	`{"method":"turn/started","params":{"threadId":"T","turn":{"id":"U","items":[],"status":"inProgress","error":null}}}`,
	`{"method":"item/started","params":{"threadId":"T","turnId":"U","item":{"type":"userMessage","id":"i1","content":[{"type":"text","text":"hi","text_elements":[]}]}}}`,
	`{"method":"item/completed","params":{"threadId":"T","turnId":"U","item":{"type":"userMessage","id":"i1","content":[{"type":"text","text":"hi","text_elements":[]}]}}}`,
	`{"method":"item/started","params":{"threadId":"T","turnId":"U","item":{"type":"agentMessage","id":"msg_1","text":"","phase":null}}}`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","turnId":"U","itemId":"msg_1","delta":"ECHO: "}}`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","turnId":"U","itemId":"msg_1","delta":"hi"}}`,
	`{"method":"item/completed","params":{"threadId":"T","turnId":"U","item":{"type":"agentMessage","id":"msg_1","text":"ECHO: hi","phase":null}}}`,
	`{"method":"thread/tokenUsage/updated","params":{"threadId":"T","turnId":"U","tokenUsage":{"total":{"totalTokens":30,"inputTokens":20,"cachedInputTokens":0,"outputTokens":10,"reasoningOutputTokens":0},"last":{"totalTokens":30,"inputTokens":20,"cachedInputTokens":0,"outputTokens":10,"reasoningOutputTokens":0},"modelContextWindow":272000}}}`,
	`{"method":"account/rateLimits/updated","params":{"rateLimits":{"primary":{"usedPercent":1,"windowDurationMins":300,"resetsAt":1764600000},"secondary":null}}}`,
	`{"method":"thread/readState/changed","params":{"threadId":"T","unread":false}}`,
	`{"method":"thread/status/changed","params":{"threadId":"T","status":{"type":"idle"}}}`,
	`{"method":"turn/completed","params":{"threadId":"T","turn":{"id":"U","items":[{"type":"agentMessage","id":"msg_1","text":"ECHO: hi","phase":null}],"status":"completed","error":null,"durationMs":12}}}`,
}

// routedClient is a client tracking thread T with a running turn whose
// mailbox the test drains itself.
func routedClient() (*Client, *conn, *turnSub) {
	cn := newConn(strings.NewReader(""), nopWriter{}, zap.NewNop())
	c := &Client{log: zap.NewNop(), threads: map[string]*threadState{}}
	cn.onNotify, cn.onEvent = c.route, c.routeEvent
	sub := newTurnSub(cn)
	c.threadFor("T").turn = sub
	return c, cn, sub
}

type nopWriter struct{}

func (nopWriter) Write(b []byte) (int, error) { return len(b), nil }

// TestRouteHandsOnOnlyWhatTheTurnReads: status, read-state and other
// notifications no consumer reads never reach the turn's mailbox (they
// are not decoded either); every method a consumer reads still does, and
// the turn folds them into the same result as before.
func TestRouteHandsOnOnlyWhatTheTurnReads(t *testing.T) {
	_, cn, sub := routedClient()
	for _, line := range oneTurnLines {
		cn.handleLine([]byte(line))
	}
	var got []string
	queued := sub.take()
	for _, n := range queued {
		got = append(got, n.method)
	}
	want := []string{"turn/started", "item/started", "item/completed", "item/started",
		"item/agentMessage/delta", "item/agentMessage/delta", "item/completed",
		"thread/tokenUsage/updated", "turn/completed"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("queued methods\n got %v\nwant %v", got, want)
	}
	var res TurnResult
	var deltas []string
	col := &collector{log: zap.NewNop(), res: &res, turnID: "U", seen: map[string]bool{},
		ev: TurnEvents{Delta: func(d string) { deltas = append(deltas, d) }}}
	ended := false
	for _, n := range queued {
		ended = col.handle(n)
	}
	if !ended || res.Status != TurnCompleted || res.Text != "ECHO: hi" {
		t.Errorf("ended %v, status %q, text %q: want a completed turn saying %q", ended, res.Status, res.Text, "ECHO: hi")
	}
	if strings.Join(deltas, "|") != "ECHO: |hi" {
		t.Errorf("deltas %q, want [ECHO:  hi]", deltas)
	}
	if res.Usage.TotalTokens != 30 {
		t.Errorf("usage total %d, want 30", res.Usage.TotalTokens)
	}
}

// TestReaderDropsUnreadNotificationsUndecoded: the notifications nothing
// reads never reach the client's router (they are dropped by method before
// the line is decoded); every other line of the turn still does.
func TestReaderDropsUnreadNotificationsUndecoded(t *testing.T) {
	cn := newConn(strings.NewReader(""), nopWriter{}, zap.NewNop())
	var routed []string
	cn.onNotify = func(_ *conn, method string, _ json.RawMessage) { routed = append(routed, method) }
	for _, line := range oneTurnLines {
		cn.handleLine([]byte(line))
	}
	want := []string{"turn/started", "item/started", "item/completed", "item/started",
		"item/agentMessage/delta", "item/agentMessage/delta", "item/completed",
		"thread/tokenUsage/updated", "account/rateLimits/updated", "turn/completed"}
	if strings.Join(routed, " ") != strings.Join(want, " ") {
		t.Fatalf("routed\n got %v\nwant %v", routed, want)
	}
}

// The notifications a turn reads go to onEvent decoded from their line in
// one pass; a line whose fast decode fails goes the full way, to onNotify.
func TestReaderDecodesTurnNotificationsInOnePass(t *testing.T) {
	cn := newConn(strings.NewReader(""), nopWriter{}, zap.NewNop())
	var full, fast []string
	cn.onNotify = func(_ *conn, method string, _ json.RawMessage) { full = append(full, method) }
	cn.onEvent = func(_ *conn, method string, e *turnEvent) { fast = append(fast, method+"@"+e.ThreadID) }
	for _, line := range oneTurnLines {
		cn.handleLine([]byte(line))
	}
	cn.handleLine([]byte(`{"method":"turn/completed","params":"not an object"}`))
	wantFast := "turn/started@T item/started@T item/completed@T item/started@T item/agentMessage/delta@T " +
		"item/agentMessage/delta@T item/completed@T thread/tokenUsage/updated@T turn/completed@T"
	if got := strings.Join(fast, " "); got != wantFast {
		t.Errorf("decoded in one pass\n got %s\nwant %s", got, wantFast)
	}
	if got, want := strings.Join(full, " "), "account/rateLimits/updated turn/completed"; got != want {
		t.Errorf("decoded in full %q, want %q (not a turn notification, and the malformed one)", got, want)
	}
}

// Only a line that opens with a plain method is read by its method; the
// rest are decoded in full.
func TestNotificationMethod(t *testing.T) {
	tests := []struct {
		line, method string
		ok           bool
	}{
		{line: `{"method":"thread/status/changed","params":{}}`, method: "thread/status/changed", ok: true},
		{line: `{"id":3,"method":"thread/status/changed","params":{}}`},
		{line: `{"method":"thread\/status/changed","params":{}}`},
		{line: `{"method":"unterminated`},
		{line: ` {"method":"x"}`},
	}
	for _, tt := range tests {
		m, ok := notificationMethod([]byte(tt.line))
		if string(m) != tt.method || ok != tt.ok {
			t.Errorf("notificationMethod(%s) = %q, %v; want %q, %v", tt.line, m, ok, tt.method, tt.ok)
		}
	}
}

// The methods dropped unread are none that the router reads.
func TestUnreadNotificationsAreNotRouted(t *testing.T) {
	for m := range unreadNotifications {
		if turnNotifications[m] || accountMethod(m) {
			t.Errorf("%s is dropped unread but routed", m)
		}
	}
}

// TestRouteKeepsThreadClosed: thread/closed, which no turn reads, still
// reaches the thread's state (it is no longer loaded).
func TestRouteKeepsThreadClosed(t *testing.T) {
	c, cn, _ := routedClient()
	ts := c.lookup("T")
	ts.markLoaded(7)
	cn.handleLine([]byte(`{"method":"thread/closed","params":{"threadId":"T"}}`))
	if ts.loadedIn(7) {
		t.Error("thread still marked loaded after thread/closed")
	}
}

// BenchmarkRouteOneTurn: the client's share of one plain turn's
// notifications, from the line read to the turn's mailbox.
func BenchmarkRouteOneTurn(b *testing.B) {
	_, cn, sub := routedClient()
	lines := make([][]byte, len(oneTurnLines))
	for i, l := range oneTurnLines {
		lines[i] = []byte(l)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			cn.handleLine(l)
		}
		sub.take()
	}
}
