package codex

// A scriptable fake app-server. TestMain re-executes the test binary with
// fakeEnv set; the child then speaks the app-server protocol on stdin/stdout,
// so the real spawn, process-group and kill code is exercised.
//
// Turns are scripted by their text (first word):
//
//	echo w1 w2 …            deltas "w1 ", "w2 ", … then completed
//	hang                    one delta, then waits for turn/interrupt
//	deaf                    never completes, not even on turn/interrupt
//	die                     one delta, then the process exits
//	fail                    error(willRetry) progress, then failed
//	approve <command>       item/commandExecution/requestApproval, answers "decision=<d>"
//	unknown-request         an unsupported server request, answers "error=<code>"
//	big <n>                 one n-byte delta line, then "big-done"
//	steerable               waits for turn/steer, answers "steered: <text>"
//	approve-pending [how]   an approval request left pending until turn/interrupt,
//	                        which completes the turn; if how is "resolved", the
//	                        first interrupt only sends serverRequest/resolved
//	                        and a second one completes the turn
//	die-flood <n>           n 1 KiB deltas and "end", then the process exits
//	reroute                 model/rerouted, guardianWarning and another turn's
//	                        model/rerouted, then "rerouted answer"
//
// account/read answers no account (mode no-account) or a chatgpt one;
// account/login/start (chatgptDeviceCode) answers a code, then sends
// account/login/completed and account/updated.
//
// mcpServerStatus/list, config/mcpServer/reload and skills/list are
// fake_tooling_test.go's.
//
// fake/hold {threadId, fail} holds the thread's next turn/start,
// thread/compact/start or thread/unsubscribe unanswered; fake/awaitHeld {threadId} answers once
// one is held; fake/release {threadId} then fails it (fail) or serves it.
//
// Thread ids passed to thread/resume are scripted by prefix: lost-, bad-,
// archived-, writer-, hang-, dieonce-, closing-. The fake records every received
// method in the file named by fakeLogEnv.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const (
	fakeEnv     = "GATEWAYD_CODEX_FAKE"
	fakeLogEnv  = "GATEWAYD_CODEX_FAKE_LOG"
	parentEnv   = "GATEWAYD_CODEX_PARENT"    // run as a gatewayd stand-in (see runParent)
	fakeFailEnv = "GATEWAYD_CODEX_FAKE_FAIL" // if this file exists, exit at once
	fakeModeEnv = "GATEWAYD_CODEX_FAKE_MODE" // comma list: garbage, child, hang-init, deaf-ping, ignore-eof
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		newFake().run()
		os.Exit(0)
	}
	if os.Getenv(parentEnv) != "" {
		os.Exit(runParent())
	}
	code := m.Run()
	closeShared()
	os.Exit(code)
}

type fakeMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
}

type fakeTurn struct {
	id        string
	interrupt chan struct{}
	steer     chan string
}

type fakeServer struct {
	wmu  sync.Mutex
	out  *bufio.Writer
	log  *os.File
	mode string

	mu          sync.Mutex
	initialized bool
	nextThread  int
	nextTurn    int
	loaded      map[string]bool
	turns       map[string]*fakeTurn // by thread id
	nextReq     int
	replies     map[string]chan fakeMsg
	childPid    int
	holds       map[string]*fakeHold // by thread id
	closing     map[string]int       // "closing-" threads: resumes refused so far
	reloaded    bool                 // config/mcpServer/reload was called
}

// fakeHold is a turn/start, thread/compact/start or thread/unsubscribe
// held unanswered.
type fakeHold struct {
	fail    bool
	req     *fakeMsg          // the held request, once it came
	waiters []json.RawMessage // fake/awaitHeld requests to answer when it comes
}

func newFake() *fakeServer {
	f := &fakeServer{
		out:     bufio.NewWriterSize(os.Stdout, 1<<20),
		mode:    os.Getenv(fakeModeEnv),
		loaded:  map[string]bool{},
		turns:   map[string]*fakeTurn{},
		replies: map[string]chan fakeMsg{},
		holds:   map[string]*fakeHold{},
	}
	if path := os.Getenv(fakeLogEnv); path != "" {
		f.log, _ = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	}
	if flag := os.Getenv(fakeFailEnv); flag != "" {
		if _, err := os.Stat(flag); err == nil {
			f.record("failstart")
			os.Exit(4) // a crash loop: dies before answering initialize
		}
	}
	if f.has("child") {
		// A grandchild in our process group, like a shell command codex runs.
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err == nil {
			f.childPid = cmd.Process.Pid
		}
	}
	return f
}

func (f *fakeServer) has(mode string) bool {
	for _, m := range strings.Split(f.mode, ",") {
		if m == mode {
			return true
		}
	}
	return false
}

func (f *fakeServer) run() {
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var m fakeMsg
			if json.Unmarshal(line, &m) == nil {
				f.handle(m)
			}
		}
		if err != nil {
			if f.has("ignore-eof") {
				select {} // outlive our parent unless something kills us
			}
			return // stdin closed: exit like the real app-server
		}
	}
}

func (f *fakeServer) record(what string) {
	if f.log != nil {
		_, _ = f.log.WriteString(what + "\n")
	}
}

func (f *fakeServer) send(v any) {
	b, _ := json.Marshal(v)
	f.sendRaw(b)
}

func (f *fakeServer) sendRaw(b []byte) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	_, _ = f.out.Write(b)
	_ = f.out.WriteByte('\n')
	_ = f.out.Flush()
}

func (f *fakeServer) notify(method string, params map[string]any) {
	f.send(map[string]any{"method": method, "params": params, "emittedAtMs": 1})
}

func (f *fakeServer) result(id json.RawMessage, v any) {
	f.send(map[string]any{"id": id, "result": v})
}

func (f *fakeServer) fail(id json.RawMessage, msg string) {
	f.send(map[string]any{"id": id, "error": map[string]any{"code": -32600, "message": msg}})
}

// request sends a server→client request and waits for the answer.
func (f *fakeServer) request(method string, params map[string]any) fakeMsg {
	_, ch := f.sendRequest(method, params)
	return <-ch
}

// sendRequest sends a server→client request; its answer comes on ch.
func (f *fakeServer) sendRequest(method string, params map[string]any) (int, <-chan fakeMsg) {
	f.mu.Lock()
	n := f.nextReq
	id := strconv.Itoa(n)
	f.nextReq++
	ch := make(chan fakeMsg, 1)
	f.replies[id] = ch
	f.mu.Unlock()
	f.send(map[string]any{"id": json.RawMessage(id), "method": method, "params": params})
	return n, ch
}

func (f *fakeServer) handle(m fakeMsg) {
	if m.Method == "" { // an answer to one of our requests
		f.record("response " + string(m.ID))
		f.mu.Lock()
		ch := f.replies[string(m.ID)]
		delete(f.replies, string(m.ID))
		f.mu.Unlock()
		if ch != nil {
			ch <- m
		}
		return
	}
	f.record(m.Method)
	if len(m.ID) == 0 {
		return // notifications: initialized
	}
	var p map[string]any
	_ = json.Unmarshal(m.Params, &p)
	str := func(k string) string { s, _ := p[k].(string); return s }
	if m.Method != "initialize" && !f.isInitialized() {
		f.fail(m.ID, "Not initialized")
		return
	}
	switch m.Method {
	case "initialize":
		f.initialize(m.ID)
	case "thread/start":
		f.startThread(m.ID)
	case "thread/resume":
		f.resume(m.ID, str("threadId"), p["excludeTurns"] == true)
	case "thread/unsubscribe":
		if f.held(m, str("threadId")) {
			return
		}
		f.unsubscribe(m.ID, str("threadId"))
	case "thread/loaded/list":
		if f.has("deaf-ping") {
			return
		}
		f.result(m.ID, map[string]any{"data": []string{}, "nextCursor": nil})
	case "turn/start":
		if !f.held(m, str("threadId")) {
			f.startTurn(m.ID, str("threadId"), m.Params)
		}
	case "turn/interrupt":
		f.interrupt(m.ID, str("threadId"), str("turnId"))
	case "turn/steer":
		f.steer(m.ID, str("threadId"), str("expectedTurnId"), m.Params)
	case "thread/compact/start":
		if !f.held(m, str("threadId")) {
			f.compact(m.ID, str("threadId"))
		}
	case "model/list":
		f.result(m.ID, fakeModelPage(str("cursor")))
	case "mcpServerStatus/list", "config/mcpServer/reload", "skills/list":
		f.tooling(m.ID, m.Method, p)
	case "account/read":
		f.readAccount(m.ID)
	case "account/login/start":
		f.startLogin(m.ID, str("type"))
	case "fake/hold":
		f.mu.Lock()
		f.holds[str("threadId")] = &fakeHold{fail: p["fail"] == true}
		f.mu.Unlock()
		f.result(m.ID, map[string]any{})
	case "fake/awaitHeld":
		f.mu.Lock()
		h := f.holds[str("threadId")]
		ready := h == nil || h.req != nil
		if !ready {
			h.waiters = append(h.waiters, m.ID)
		}
		f.mu.Unlock()
		if ready {
			f.result(m.ID, map[string]any{})
		}
	case "fake/release":
		f.release(m.ID, str("threadId"))
	case "fake/info":
		f.result(m.ID, map[string]any{"pid": os.Getpid(), "childPid": f.childPid})
	case "fake/echo":
		f.result(m.ID, m.Params)
	case "fake/flood":
		f.flood(m.ID, p)
	default:
		f.fail(m.ID, "unknown method "+m.Method)
	}
}

func (f *fakeServer) isInitialized() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.initialized
}

func (f *fakeServer) initialize(id json.RawMessage) {
	if f.has("hang-init") {
		return
	}
	f.mu.Lock()
	again := f.initialized
	f.initialized = true
	f.mu.Unlock()
	if again {
		f.fail(id, "Already initialized")
		return
	}
	if f.has("garbage") {
		f.sendRaw([]byte("this is not json"))
		f.sendRaw([]byte(`{"neither":"id nor method"}`))
		f.sendRaw([]byte(`{"method":"some/unknownNotification","params":{"x":1}}`))
		f.sendRaw([]byte(`{"method":"item/agentMessage/delta","params":{"threadId":"nobody","delta":"x"}}`))
		f.sendRaw([]byte(`{"id":999999,"result":{}}`))
	}
	f.result(id, map[string]any{"userAgent": "fake/0.169.0", "codexHome": os.Getenv("CODEX_HOME"),
		"platformFamily": "unix", "platformOs": "linux"})
	f.notify("remoteControl/status/changed", map[string]any{"status": "disabled"})
}

func (f *fakeServer) startThread(id json.RawMessage) {
	f.mu.Lock()
	f.nextThread++
	tid := fmt.Sprintf("0199%04d-%d", f.nextThread, os.Getpid())
	f.loaded[tid] = true
	f.mu.Unlock()
	thread := map[string]any{"id": tid, "path": "/tmp/rollout-" + tid + ".jsonl"}
	f.result(id, map[string]any{"thread": thread, "model": "fake-model"})
	f.notify("thread/started", map[string]any{"thread": thread})
}

func (f *fakeServer) resume(id json.RawMessage, tid string, exclude bool) {
	switch {
	case strings.HasPrefix(tid, "lost-"):
		f.fail(id, "no rollout found for thread id "+tid)
	case strings.HasPrefix(tid, "bad-"):
		f.fail(id, "invalid session id: invalid character: expected an optional prefix of `urn:uuid:`")
	case strings.HasPrefix(tid, "archived-"):
		f.fail(id, "session "+tid+" is archived. Run `codex unarchive "+tid+"` to unarchive it first.")
	case strings.HasPrefix(tid, "writer-"):
		f.fail(id, "thread "+tid+" already has an active writer")
	case strings.HasPrefix(tid, "dieonce-") && f.firstDeath():
		os.Exit(5) // the process dies while the resume is pending
	case strings.HasPrefix(tid, "hang-"):
		// never answers: a resume that takes forever
	case strings.HasPrefix(tid, "closing-") && f.stillClosing(tid):
		f.fail(id, "thread "+tid+" is closing; retry thread/resume after the thread is closed")
	case !exclude:
		f.fail(id, "test fake: excludeTurns must be true")
	default:
		f.mu.Lock()
		f.loaded[tid] = true
		f.mu.Unlock()
		f.result(id, map[string]any{"thread": map[string]any{"id": tid, "turns": []any{}}})
		f.notify("thread/tokenUsage/updated", usageParams(tid, "", 500))
	}
}

// stillClosing counts a resume of a "closing-" thread: the first two are
// refused, as the app-server refuses a thread it is still unloading.
func (f *fakeServer) stillClosing(tid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing == nil {
		f.closing = map[string]int{}
	}
	f.closing[tid]++
	return f.closing[tid] <= 2
}

// firstDeath reports whether this is the first "dieonce-" resume across
// restarts, remembered in a file next to the log.
func (f *fakeServer) firstDeath() bool {
	marker := os.Getenv(fakeLogEnv) + ".died"
	if _, err := os.Stat(marker); err == nil {
		return false
	}
	_ = os.WriteFile(marker, nil, 0o600)
	return true
}

func usageParams(tid, turnID string, total int) map[string]any {
	counts := map[string]any{"totalTokens": total, "inputTokens": total - 10, "cachedInputTokens": 3,
		"outputTokens": 10, "reasoningOutputTokens": 2}
	return map[string]any{"threadId": tid, "turnId": turnID, "tokenUsage": map[string]any{
		"total": counts, "last": map[string]any{"totalTokens": 42}, "modelContextWindow": 200000}}
}

// held holds m if a fake/hold is set for the thread.
func (f *fakeServer) held(m fakeMsg, tid string) bool {
	f.mu.Lock()
	h := f.holds[tid]
	if h == nil || h.req != nil {
		f.mu.Unlock()
		return false
	}
	h.req = &m
	waiters := h.waiters
	h.waiters = nil
	f.mu.Unlock()
	for _, w := range waiters {
		f.result(w, map[string]any{})
	}
	return true
}

// release answers fake/release, then fails or serves the held request.
func (f *fakeServer) release(id json.RawMessage, tid string) {
	f.mu.Lock()
	h := f.holds[tid]
	delete(f.holds, tid)
	f.mu.Unlock()
	f.result(id, map[string]any{})
	if h == nil || h.req == nil {
		return
	}
	m := *h.req
	if h.fail {
		f.fail(m.ID, "test fake: held "+m.Method+" failed")
		return
	}
	switch m.Method {
	case "turn/start":
		f.startTurn(m.ID, tid, m.Params)
	case "thread/unsubscribe":
		f.unsubscribe(m.ID, tid)
	default:
		f.compact(m.ID, tid)
	}
}

func (f *fakeServer) unsubscribe(id json.RawMessage, tid string) {
	f.mu.Lock()
	delete(f.loaded, tid)
	f.mu.Unlock()
	f.result(id, map[string]any{"status": "unsubscribed"})
	// As the real app-server does with UnloadArgs: unloaded at once.
	f.notify("thread/closed", map[string]any{"threadId": tid})
}

func (f *fakeServer) readAccount(id json.RawMessage) {
	if f.has("no-account") {
		f.result(id, map[string]any{"account": nil, "requiresOpenaiAuth": true})
		return
	}
	f.result(id, map[string]any{"account": map[string]any{"type": "chatgpt", "email": "me@example.com", "planType": "plus"},
		"requiresOpenaiAuth": true})
}

func (f *fakeServer) startLogin(id json.RawMessage, typ string) {
	if typ != "chatgptDeviceCode" {
		f.fail(id, "unsupported login type "+typ)
		return
	}
	f.result(id, map[string]any{"type": typ, "loginId": "login-1",
		"verificationUrl": "https://auth.example/device", "userCode": "ABCD-1234"})
	f.notify("account/login/completed", map[string]any{"loginId": "login-1", "success": true, "error": nil})
	f.notify("account/updated", map[string]any{"authMode": "chatgpt", "planType": "plus"})
}
