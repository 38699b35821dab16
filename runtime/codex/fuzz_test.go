package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// Lines appended after the fuzzed bytes: whatever came before, a well-formed
// notification and the response to a pending call must still be routed.
const (
	markerMethod = "fuzz/marker"
	markerLine   = `{"method":"fuzz/marker","params":{"threadId":"t-fuzz"}}`
	pendingID    = 424242
	answerLine   = `{"id":424242,"result":{"ok":true}}`
)

// FuzzReadLoop feeds any bytes to the JSON-RPC line reader, then a valid
// notification and a response. The reader must not panic, must route both
// valid messages, must start one handler per server request line and no
// more, each handler must return (no goroutine left behind), and the
// default handler must answer every request with exactly one line.
func FuzzReadLoop(f *testing.F) {
	for _, seed := range []string{
		"", "garbage", "{", "null", "[]", `{"id":null}`, `{"id":"x","result":1}`,
		`{"id":1,"method":"item/commandExecution/requestApproval","params":{"threadId":"t","turnId":"u"}}`,
		`{"method":"serverRequest/resolved","params":{"requestId":1}}`,
		`{"id":424242,"error":{"code":-1,"message":"no"}}`,
		"{\"method\":\"x\"}\r\n\n \n\x00\xff",
		`{"id":99999999999999999999,"result":{}}`,
		"{\"id\":2,\"method\":\"a\"}\n{\"id\":2,\"method\":\"b\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Add(bytes.Join(recordedServer(f), []byte("\n"))) // every recorded session at once
	f.Fuzz(func(t *testing.T, garbage []byte) {
		stream := append(append(bytes.Clone(garbage), '\n'), markerLine+"\n"+answerLine+"\n"...)
		var (
			markers  int
			handlers sync.WaitGroup
			out      lockedBuffer
		)
		want := serverRequestLines(stream)
		handlers.Add(want)
		cn := newConn(bytes.NewReader(stream), &out, zap.NewNop())
		refuse := cn.onRequest
		cn.onRequest = func(ctx context.Context, c *conn, id json.RawMessage, method string, params json.RawMessage) {
			defer handlers.Done() // panics if more handlers start than request lines
			refuse(ctx, c, id, method, params)
		}
		cn.onNotify = func(_ *conn, method string, _ json.RawMessage) {
			if method == markerMethod {
				markers++ // the reader's goroutine is the only caller
			}
		}
		answer := make(chan response, 1)
		cn.pending[pendingID] = answer
		cn.readLoop()

		returned := make(chan struct{})
		go func() { handlers.Wait(); close(returned) }()
		select {
		case <-returned:
		case <-time.After(10 * time.Second):
			t.Fatalf("request handlers did not all return: %d request lines", want)
		}
		if markers == 0 {
			t.Fatalf("the notification after the garbage was not routed")
		}
		select {
		case <-answer:
		default:
			t.Fatalf("the response after the garbage was not delivered")
		}
		if cn.alive() {
			t.Fatalf("the connection is alive after EOF")
		}
		if got := bytes.Count(out.bytes(), []byte("\n")); got != want {
			t.Fatalf("%d replies for %d server requests:\n%s", got, want, out.bytes())
		}
	})
}

// serverRequestLines counts the lines that are server→client requests by
// the protocol's rule: an object with both an id (not null) and a method.
func serverRequestLines(stream []byte) int {
	n := 0
	for line := range bytes.Lines(stream) {
		var env envelope
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &env) != nil {
			continue
		}
		if len(env.ID) > 0 && string(env.ID) != "null" && env.Method != "" {
			n++
		}
	}
	return n
}

// lockedBuffer is the app-server's stdin: handlers write from their own
// goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// fuzzMethods are the notifications the client decodes; the fuzz target
// picks one by index so the fuzzer spends its time on the params.
var fuzzMethods = []string{
	"turn/started", "turn/completed", "item/started", "item/completed", "item/agentMessage/delta",
	"thread/tokenUsage/updated", "error", "turn/plan/updated", "serverRequest/resolved",
	"thread/closed", "account/rateLimits/updated", "account/updated", "account/login/completed",
	"item/reasoning/summaryTextDelta",
}

// FuzzNotification routes any params under each notification method to a
// thread with a running turn and folds them as RunTurn does. Nothing may
// panic; a notification naming the thread reaches its turn exactly once and
// one naming nothing never does; a delta of the turn is streamed as sent; a
// turn/completed of the turn ends it with the status it carries.
func FuzzNotification(f *testing.F) {
	for i, params := range []string{
		`{"threadId":"t1","turn":{"id":"u1","status":"completed","items":[{"type":"agentMessage","id":"m","text":"hi"}]}}`,
		`{"threadId":"t1","turnId":"u1","itemId":"m","delta":"he"}`,
		`{"threadId":"t1","turnId":"u1","item":{"type":"commandExecution","id":"c","command":"ls","status":"completed"}}`,
		`{"threadId":"t1","turnId":"u1","tokenUsage":{"total":{"totalTokens":5},"last":{"totalTokens":5},"modelContextWindow":100}}`,
		`{"threadId":"t1","turnId":"u1","error":{"message":"boom","codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":502}}},"willRetry":true}`,
		`{"threadId":"t1","turnId":"u1","plan":[{"step":"a","status":"pending"}],"explanation":"x"}`,
		`{"requestId":3}`, `{"threadId":"t1"}`,
		`{"rateLimits":{"primary":{"usedPercent":50,"windowDurationMins":300,"resetsAt":1700000000}}}`,
		`null`, `{"threadId":"t1","turn":null}`, `[1,2]`,
	} {
		f.Add(uint8(i), []byte(params))
	}
	for _, line := range recordedServer(f) {
		var env envelope
		if json.Unmarshal(line, &env) != nil {
			continue
		}
		for i, m := range fuzzMethods {
			if m == env.Method {
				f.Add(uint8(i), []byte(env.Params))
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, params []byte) {
		method := fuzzMethods[int(which)%len(fuzzMethods)]
		var deltas []string
		c, sub, col := fuzzTurn(func(d string) { deltas = append(deltas, d) })
		cn := sub.cn
		c.route(cn, method, params)
		queued := sub.take()
		ended := false
		for _, n := range queued {
			ended = col.handle(n) || ended
		}

		checkLineMatchesRoute(t, method, params, len(queued), deltas)

		var e turnEvent
		decodes := json.Unmarshal(params, &e) == nil
		// Only the methods a turn reads are handed on (turnNotifications);
		// the rest are dropped undecoded, which is the point of the list.
		toTurn := decodes && e.ThreadID == "t1" && !accountMethod(method) && turnNotifications[method]
		if toTurn != (len(queued) == 1) || len(queued) > 1 {
			t.Fatalf("%s %s: %d notifications reached the turn, want to-turn=%v", method, params, len(queued), toTurn)
		}
		if !toTurn {
			return
		}
		id := e.TurnID
		if id == "" && e.Turn != nil {
			id = e.Turn.ID
		}
		ours := id == "" || id == "u1"
		if method == "item/agentMessage/delta" && ours && (len(deltas) != 1 || deltas[0] != e.Delta) {
			t.Fatalf("delta %q streamed as %q", e.Delta, deltas)
		}
		if method == "turn/completed" && e.Turn != nil && ours {
			if !ended || col.res.Status != TurnStatus(e.Turn.Status) {
				t.Fatalf("turn/completed %s: ended %v, status %q", params, ended, col.res.Status)
			}
		}
	})
}

// checkLineMatchesRoute feeds the notification as the line the app-server
// writes through the reader, whose one-pass decode must hand the turn what
// route did from the params: as many notifications, the same deltas.
func checkLineMatchesRoute(t *testing.T, method string, params []byte, routed int, routedDeltas []string) {
	t.Helper()
	if !json.Valid(params) {
		return // as a line it may parse as something else entirely
	}
	var deltas []string
	c, sub, col := fuzzTurn(func(d string) { deltas = append(deltas, d) })
	cn := sub.cn
	cn.onNotify, cn.onEvent = c.route, c.routeEvent
	cn.handleLine([]byte(`{"method":"` + method + `","params":` + string(params) + `}`))
	queued := sub.take()
	for _, n := range queued {
		col.handle(n)
	}
	if len(queued) != routed || strings.Join(deltas, "|") != strings.Join(routedDeltas, "|") {
		t.Fatalf("%s %s as a line: %d notifications, deltas %q; route: %d, %q", method, params, len(queued), deltas, routed, routedDeltas)
	}
}

func accountMethod(m string) bool {
	return m == "account/rateLimits/updated" || m == "account/updated" || m == "account/login/completed"
}

// fuzzTurn is a client tracking thread t1 with turn u1 running, as RunTurn
// sets it up.
func fuzzTurn(delta func(string)) (*Client, *turnSub, *collector) {
	c := &Client{log: zap.NewNop(), threads: map[string]*threadState{}}
	cn := newConn(bytes.NewReader(nil), &lockedBuffer{}, zap.NewNop())
	ts := c.threadFor("t1")
	sub := newTurnSub(cn)
	ts.turn = sub
	col := &collector{log: c.log, res: &TurnResult{}, turnID: "u1", seen: map[string]bool{},
		ev: TurnEvents{Delta: delta, Progress: func(Progress) {}}}
	return c, sub, col
}
