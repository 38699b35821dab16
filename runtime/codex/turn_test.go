package codex

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestInterleavedTurnsAreRoutedToTheirThreads(t *testing.T) {
	fc := sharedFake(t)
	const threads = 12
	ids := make([]string, threads)
	for i := range ids {
		ids[i] = fc.newThread(t)
	}
	var wg sync.WaitGroup
	for i, tid := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var words []string
			for w := range 30 {
				words = append(words, fmt.Sprintf("t%d-w%d", i, w))
			}
			input := "echo " + strings.Join(words, " ")
			var deltas strings.Builder
			var startedID string
			res, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: input}, TurnEvents{
				Started: func(id string) { startedID = id },
				Delta:   func(d string) { deltas.WriteString(d) },
			})
			want := strings.Join(words, " ") + " "
			switch {
			case err != nil:
				t.Errorf("thread %d: %v", i, err)
			case res.Status != TurnCompleted || res.Text != want || deltas.String() != want:
				t.Errorf("thread %d: status %s text %q deltas %q, want %q", i, res.Status, res.Text, deltas.String(), want)
			case startedID != res.TurnID || res.ThreadID != tid:
				t.Errorf("thread %d: started %q, result turn %q thread %q", i, startedID, res.TurnID, res.ThreadID)
			}
			checkItems(t, res, input, want)
		}()
	}
	wg.Wait()
}

// checkItems asserts the echoed user message is marked as an echo and the
// agent message carries the final text.
func checkItems(t *testing.T, res TurnResult, input, agent string) {
	t.Helper()
	var echoes, agents int
	for _, it := range res.Items {
		switch {
		case it.IsUserEcho():
			echoes++
			if it.Text != input {
				t.Errorf("user echo text %q, want %q", it.Text, input)
			}
		case it.Type == ItemAgentMessage:
			agents++
			if it.Text != agent || len(it.Raw) == 0 {
				t.Errorf("agent item %+v", it)
			}
		}
	}
	if echoes != 1 || agents != 1 {
		t.Errorf("items: %d user echoes, %d agent messages; want 1 and 1 (%+v)", echoes, agents, res.Items)
	}
}

func TestLineLongerThan8MB(t *testing.T) {
	t.Parallel()
	fc := sharedFake(t)
	tid := fc.newThread(t)
	const n = 8<<20 + 1024
	var streamed int
	res, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: fmt.Sprintf("big %d", n)}, TurnEvents{Delta: func(d string) { streamed += len(d) }})
	if err != nil {
		t.Fatal(err)
	}
	if streamed != n+len("big-done") || res.Text != "big-done" {
		t.Fatalf("streamed %d bytes, text %q; want %d and big-done", streamed, res.Text, n+len("big-done"))
	}
}

func TestServerRequests(t *testing.T) {
	tests := []struct {
		name     string
		decision Decision
		text     string
		want     string
	}{
		{name: "approval accepted for session", decision: DecisionAcceptForSession, text: "approve rm -rf build", want: "decision=acceptForSession"},
		{name: "approval declined", decision: DecisionDecline, text: "approve touch x", want: "decision=decline"},
		{name: "invalid v1 decision becomes decline", decision: "approved", text: "approve touch x", want: "decision=decline"},
		{name: "unknown request gets an error", text: "unknown-request", want: "error=-32601"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []ApprovalRequest
			fc := sharedFake(t)
			tid := fc.newThread(t)
			shared.approvals.Store(tid, ApprovalHandler(func(_ context.Context, req ApprovalRequest) Decision {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, req)
				return tt.decision
			}))
			defer shared.approvals.Delete(tid)
			res, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: tt.text}, TurnEvents{})
			if err != nil || res.Text != tt.want {
				t.Fatalf("RunTurn = %q, %v; want %q", res.Text, err, tt.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if tt.decision == "" {
				if len(got) != 0 {
					t.Errorf("handler called for a non-approval request: %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("handler called %d times", len(got))
			}
			req := got[0]
			wantCmd := strings.TrimPrefix(tt.text, "approve ")
			if req.Kind != "command" || req.ThreadID != tid || req.TurnID != res.TurnID || req.ItemID != "call_1" ||
				req.Command != wantCmd || req.Cwd != "/work" || req.Reason != "needs it" || len(req.Raw) == 0 {
				t.Errorf("approval request %+v", req)
			}
		})
	}
}

func TestFailedTurnReportsErrorAndIgnoresRetryProgress(t *testing.T) {
	fc := sharedFake(t)
	tid := fc.newThread(t)
	res, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: "fail"}, TurnEvents{})
	if err != nil {
		t.Fatalf("a failed turn is a result, not an error: %v", err)
	}
	if res.Status != TurnFailed || res.Error == nil ||
		!strings.Contains(res.Error.Message, "high demand") || res.Error.Info != `"internalServerError"` {
		t.Fatalf("result %+v error %+v", res, res.Error)
	}
	if res.Usage.TotalTokens != 1000 || res.Usage.LastTotalTokens != 42 || res.Usage.ContextWindow != 200000 {
		t.Errorf("usage %+v", res.Usage)
	}
	want := res.Usage
	want.Turn = TokenCounts{} // the turn's own spend is on its result only
	if u, ok := fc.Usage(tid); !ok || u != want {
		t.Errorf("Usage(thread) = %+v, %v; want %+v", u, ok, want)
	}
}

func TestWatchdog(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		wantErr    error
		wantStatus TurnStatus
		keepsBusy  bool // the server may still run the turn: no second turn until it ends
	}{
		{name: "interrupt ends the turn", text: "hang", wantStatus: TurnInterrupted},
		{name: "server never completes", text: "deaf", wantErr: ErrTimeout, keepsBusy: true},
	}
	fc := startFake(t, fakeConfig{tweak: func(o *Options) {
		o.TurnTimeout = 150 * time.Millisecond
		o.InterruptGrace = 300 * time.Millisecond
	}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tid := fc.newThread(t)
			interrupts := count(fc.received(t), "turn/interrupt")
			res, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: tt.text}, TurnEvents{})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !res.WatchdogFired || res.Status != tt.wantStatus || res.Text != "partial " {
				t.Errorf("result %+v", res)
			}
			if n := count(fc.received(t), "turn/interrupt") - interrupts; n != 1 {
				t.Errorf("fake saw %d turn/interrupt, want 1", n)
			}
			if tt.keepsBusy {
				sub := fc.lookup(tid).activeTurn()
				if sub == nil {
					t.Fatal("the thread was freed while the server may still run the turn")
				}
				if _, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: "echo next"}, TurnEvents{}); !errors.Is(err, ErrTurnActive) {
					t.Fatalf("turn right after = %v, want ErrTurnActive", err)
				}
				select { // the fake never completes it: freed after another TurnTimeout
				case <-sub.freed:
				case <-testCtx(t).Done():
					t.Fatal("the thread was never freed")
				}
			}
			// The thread is usable again.
			if res, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: "echo next"}, TurnEvents{}); err != nil || res.Text != "next " {
				t.Errorf("next turn = %q, %v", res.Text, err)
			}
		})
	}
}

func TestCancelledContextInterruptsTurn(t *testing.T) {
	fc := sharedFake(t)
	tid := fc.newThread(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	res, err := fc.RunTurn(ctx, tid, TurnInput{Text: "hang"}, TurnEvents{Delta: func(string) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res.Status != TurnInterrupted || res.WatchdogFired || res.Text != "partial " {
		t.Errorf("result %+v", res)
	}
}

func TestInterruptAndSteer(t *testing.T) {
	fc := sharedFake(t)
	tid := fc.newThread(t)
	ctx := testCtx(t)
	if err := fc.Interrupt(ctx, tid); !errors.Is(err, ErrNoActiveTurn) {
		t.Errorf("Interrupt idle = %v, want ErrNoActiveTurn", err)
	}
	if err := fc.Steer(ctx, tid, "x"); !errors.Is(err, ErrNoActiveTurn) {
		t.Errorf("Steer idle = %v, want ErrNoActiveTurn", err)
	}

	steerErr := make(chan error, 1)
	res, err := fc.RunTurn(ctx, tid, TurnInput{Text: "steerable"}, TurnEvents{Delta: func(d string) {
		if d == "discarded " {
			go func() { steerErr <- fc.Steer(ctx, tid, "more please") }()
		}
	}})
	if err != nil {
		t.Fatalf("RunTurn: %v", err)
	}
	if err := <-steerErr; err != nil {
		t.Fatalf("Steer: %v", err)
	}
	if res.Text != "steered: more please" {
		t.Errorf("text %q", res.Text)
	}
	echoes := 0
	for _, it := range res.Items {
		if it.IsUserEcho() {
			echoes++
		}
	}
	if echoes != 2 {
		t.Errorf("%d user echoes, want 2 (input and steer)", echoes)
	}

	// Interrupt from another goroutine, once, and wait for its answer: the
	// test must not end (and report) before the call does.
	interrupted := make(chan error, 1)
	var once sync.Once
	res, err = fc.RunTurn(ctx, tid, TurnInput{Text: "hang"}, TurnEvents{Delta: func(string) {
		once.Do(func() { go func() { interrupted <- fc.Interrupt(ctx, tid) }() })
	}})
	if err != nil || res.Status != TurnInterrupted || res.WatchdogFired {
		t.Errorf("interrupted turn %+v, %v", res, err)
	}
	if err := <-interrupted; err != nil {
		t.Errorf("Interrupt: %v", err)
	}
}

func TestOneTurnPerThread(t *testing.T) {
	fc := sharedFake(t)
	tid := fc.newThread(t)
	ctx := testCtx(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = fc.RunTurn(ctx, tid, TurnInput{Text: "hang"}, TurnEvents{Delta: func(string) {
			if _, err := fc.RunTurn(ctx, tid, TurnInput{Text: "echo second"}, TurnEvents{}); !errors.Is(err, ErrTurnActive) {
				t.Errorf("second RunTurn = %v, want ErrTurnActive", err)
			}
			if err := fc.Release(ctx, tid); !errors.Is(err, ErrTurnActive) {
				t.Errorf("Release during turn = %v, want ErrTurnActive", err)
			}
			go func() { _ = fc.Interrupt(ctx, tid) }()
		}})
	}()
	<-done
}

func TestCompact(t *testing.T) {
	fc := sharedFake(t)
	tid := fc.newThread(t)
	if _, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: "echo fill"}, TurnEvents{}); err != nil {
		t.Fatal(err)
	}
	before, after, err := fc.Compact(testCtx(t), tid)
	if err != nil {
		t.Fatal(err)
	}
	if before.TotalTokens != 1000 || after.TotalTokens != 300 {
		t.Errorf("before %d after %d, want 1000 and 300", before.TotalTokens, after.TotalTokens)
	}
	if _, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: "echo after"}, TurnEvents{}); err != nil {
		t.Errorf("turn after compaction: %v", err)
	}
}

// A refused server request still gets its JSON-RPC error (the turn goes
// on), and the Unsupported hook learns which thread asked for what, once.
func TestUnsupportedRequestIsReported(t *testing.T) {
	fc := sharedFake(t)
	tid := fc.newThread(t)
	heard := make(chan string, 2)
	shared.refused.Store(tid, UnsupportedHandler(func(threadID, method string) { heard <- threadID + " " + method }))
	defer shared.refused.Delete(tid)
	ctx := testCtx(t)
	res, err := fc.RunTurn(ctx, tid, TurnInput{Text: "unknown-request"}, TurnEvents{})
	if err != nil || res.Text != "error=-32601" {
		t.Fatalf("RunTurn = %q, %v; want the request answered with error -32601", res.Text, err)
	}
	select {
	case got := <-heard:
		if got != tid+" item/tool/call" {
			t.Errorf("hook heard %q, want %q", got, tid+" item/tool/call")
		}
	case <-ctx.Done():
		t.Fatal("the Unsupported hook was never called")
	}
	// A later approval on the same thread is not reported as refused.
	shared.approvals.Store(tid, ApprovalHandler(func(context.Context, ApprovalRequest) Decision { return DecisionAccept }))
	defer shared.approvals.Delete(tid)
	if res, err := fc.RunTurn(ctx, tid, TurnInput{Text: "approve ls"}, TurnEvents{}); err != nil || res.Text != "decision=accept" {
		t.Fatalf("approval turn = %q, %v", res.Text, err)
	}
	if res, err := fc.RunTurn(ctx, tid, TurnInput{Text: "unknown-request"}, TurnEvents{}); err != nil || res.Text != "error=-32601" {
		t.Fatalf("second refused turn = %q, %v", res.Text, err)
	}
	// The hook runs once per request: the second refusal is the next call,
	// and nothing was reported for the approval between them.
	select {
	case got := <-heard:
		if got != tid+" item/tool/call" {
			t.Errorf("hook heard %q after the approval, want only the second refusal", got)
		}
	case <-ctx.Done():
		t.Fatal("the second refusal was never reported")
	}
}

// A Steer or Interrupt that waits for the id of a turn whose turn/start
// then fails returns ErrNoActiveTurn at once instead of waiting out its ctx.
func TestSteerAndInterruptReturnWhenTurnEndsWithoutAnID(t *testing.T) {
	ops := []struct {
		name string
		call func(fc *fakeClient, ctx context.Context, tid string) error
	}{
		{"steer", func(fc *fakeClient, ctx context.Context, tid string) error { return fc.Steer(ctx, tid, "more") }},
		{"interrupt", func(fc *fakeClient, ctx context.Context, tid string) error { return fc.Interrupt(ctx, tid) }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			fc := sharedFake(t)
			tid := fc.newThread(t)
			ctx := testCtx(t)
			fc.fake(t, "fake/hold", map[string]any{"threadId": tid, "fail": true})
			runErr := make(chan error, 1)
			go func() {
				_, err := fc.RunTurn(ctx, tid, TurnInput{Text: "echo never"}, TurnEvents{})
				runErr <- err
			}()
			fc.fake(t, "fake/awaitHeld", map[string]any{"threadId": tid})

			probe := newDoneProbe(ctx)
			opErr := make(chan error, 1)
			go func() { opErr <- op.call(fc, probe, tid) }()
			select {
			case <-probe.asked: // it waits for the turn id
			case err := <-opErr:
				t.Fatalf("%s returned before turn/start was answered: %v", op.name, err)
			}
			fc.fake(t, "fake/release", map[string]any{"threadId": tid})
			var rpcErr *RPCError
			if err := <-runErr; !errors.As(err, &rpcErr) {
				t.Fatalf("RunTurn = %v, want the turn/start RPC error", err)
			}
			select {
			case err := <-opErr:
				if !errors.Is(err, ErrNoActiveTurn) {
					t.Errorf("%s = %v, want ErrNoActiveTurn", op.name, err)
				}
			case <-ctx.Done():
				t.Fatalf("%s still waits for the id of a turn that ended", op.name)
			}
		})
	}
}

// When the caller stops waiting for turn/start (or thread/compact/start)
// the server may start the turn anyway. That turn is interrupted once its
// answer arrives, and the thread stays busy until it completes: no second
// turn is started beside it.
func TestAbandonedTurnStartIsInterruptedAndKeepsTheThreadBusy(t *testing.T) {
	fc := startFake(t, fakeConfig{tweak: func(o *Options) { o.StartTimeout = time.Second }})
	tests := []struct {
		name    string
		cancel  bool // cancel ctx; else StartTimeout expires
		run     func(ctx context.Context, tid string) error
		wantErr error
		isTurn  bool // a "hang" turn, which only an interrupt ends
	}{
		{name: "RunTurn ctx cancelled", cancel: true, wantErr: context.Canceled, isTurn: true,
			run: func(ctx context.Context, tid string) error {
				_, err := fc.RunTurn(ctx, tid, TurnInput{Text: "hang"}, TurnEvents{})
				return err
			}},
		{name: "RunTurn StartTimeout", wantErr: ErrTimeout, isTurn: true,
			run: func(ctx context.Context, tid string) error {
				_, err := fc.RunTurn(ctx, tid, TurnInput{Text: "hang"}, TurnEvents{})
				return err
			}},
		{name: "Compact ctx cancelled", cancel: true, wantErr: context.Canceled,
			run: func(ctx context.Context, tid string) error { _, _, err := fc.Compact(ctx, tid); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tid := fc.newThread(t)
			fc.fake(t, "fake/hold", map[string]any{"threadId": tid})
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- tt.run(ctx, tid) }()
			fc.fake(t, "fake/awaitHeld", map[string]any{"threadId": tid})
			sub := fc.lookup(tid).activeTurn()
			interrupts := count(fc.received(t), "turn/interrupt")
			if tt.cancel {
				cancel()
			}
			if err := <-errc; !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if _, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: "echo second"}, TurnEvents{}); !errors.Is(err, ErrTurnActive) {
				t.Fatalf("turn while the first may still start = %v, want ErrTurnActive", err)
			}
			fc.fake(t, "fake/release", map[string]any{"threadId": tid})
			waitFreed(t, sub) // a "hang" turn ends only on turn/interrupt
			if n := count(fc.received(t), "turn/interrupt") - interrupts; tt.isTurn && n != 1 {
				t.Errorf("fake saw %d turn/interrupt, want 1", n)
			}
			if res, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: "echo next"}, TurnEvents{}); err != nil || res.Text != "next " {
				t.Errorf("next turn = %q, %v", res.Text, err)
			}
		})
	}
}

// An approval handler's ctx ends when the server no longer waits for the
// answer: on serverRequest/resolved for its id, or when its turn completes
// (an interrupted turn withdraws its pending approvals, docs/codex-app-server.md §10.4).
func TestApprovalContextEndsWhenTheRequestIsWithdrawn(t *testing.T) {
	tests := []struct {
		name, text string
	}{
		{name: "turn completed", text: "approve-pending"},
		{name: "serverRequest/resolved", text: "approve-pending resolved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := sharedFake(t)
			tid := fc.newThread(t)
			ctx := testCtx(t)
			asked := make(chan struct{})
			ended := make(chan error, 1)
			stop := make(chan struct{})
			defer close(stop)
			shared.approvals.Store(tid, ApprovalHandler(func(hctx context.Context, _ ApprovalRequest) Decision {
				close(asked)
				select {
				case <-hctx.Done():
					ended <- hctx.Err()
				case <-stop:
				}
				return DecisionDecline
			}))
			defer shared.approvals.Delete(tid)
			type result struct {
				res TurnResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := fc.RunTurn(ctx, tid, TurnInput{Text: tt.text}, TurnEvents{})
				done <- result{res, err}
			}()
			select {
			case <-asked:
			case <-ctx.Done():
				t.Fatal("no approval request")
			}
			if err := fc.Interrupt(ctx, tid); err != nil {
				t.Fatalf("Interrupt: %v", err)
			}
			select {
			case <-ended:
			case <-ctx.Done():
				t.Fatal("the approval handler was never told the request was withdrawn")
			}
			if tt.text == "approve-pending resolved" { // the fake completes the turn on a second interrupt
				if err := fc.Interrupt(ctx, tid); err != nil {
					t.Fatalf("second Interrupt: %v", err)
				}
			}
			r := <-done
			if r.err != nil || r.res.Status != TurnInterrupted {
				t.Errorf("RunTurn = %+v, %v; want interrupted", r.res, r.err)
			}
		})
	}
}

func TestTurnInputParams(t *testing.T) {
	text := []map[string]any{{"type": "text", "text": "hi", "text_elements": []any{}}}
	tests := []struct {
		name string
		in   TurnInput
		want map[string]any
	}{
		{"text only", TurnInput{Text: "hi"}, map[string]any{"threadId": "th", "input": text}},
		{"with a cwd", TurnInput{Text: "hi", Cwd: "/srv/site"}, map[string]any{"threadId": "th", "input": text, "cwd": "/srv/site"}},
		{"with images", TurnInput{Text: "hi", Images: []string{"/f/a.png", "/f/b.jpg"}}, map[string]any{"threadId": "th",
			"input": append(append([]map[string]any{}, text...),
				map[string]any{"type": "localImage", "path": "/f/a.png"}, map[string]any{"type": "localImage", "path": "/f/b.jpg"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.params("th"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("params = %#v, want %#v", got, tt.want)
			}
		})
	}
}
