package codex_test

// Integration tests of the client against the REAL codex app-server binary
// (found by codextest.CodexBinary) talking to the fake Responses API model of
// codextest on 127.0.0.1, each with its own CODEX_HOME in a temp dir.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

func TestIntegrationFailedModelTurn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reply     codextest.Reply
		wantInfo  string // substring of codexErrorInfo
		wantError string // substring of the message
	}{
		{name: "http 500", reply: codextest.Reply{HTTPStatus: 500}, wantInfo: "internalServerError"},
		{name: "http 429", reply: codextest.Reply{HTTPStatus: 429}, wantInfo: "429"},
		{name: "stream failure", reply: codextest.Reply{StreamFailure: "fake failure"}, wantError: "fake failure"},
	}
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	c := startClient(t, m, codextest.Home(t))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m.Respond(func(req codextest.Request) codextest.Reply {
				if strings.Contains(req.LastUserText(), "FAIL") {
					return tt.reply
				}
				return codextest.DefaultReply(req)
			})
			th := ensure(t, ctx, c, "", codex.OutcomeStarted)
			res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "FAIL please"}, codex.TurnEvents{})
			if err != nil {
				t.Fatalf("RunTurn: %v (a failed turn is a result, not an error)", err)
			}
			if res.Status != "failed" || res.Error == nil {
				t.Fatalf("status %q error %+v, want failed with an error", res.Status, res.Error)
			}
			if !strings.Contains(res.Error.Info, tt.wantInfo) || !strings.Contains(res.Error.Message, tt.wantError) {
				t.Errorf("turn error %+v, want info containing %q and message containing %q", *res.Error, tt.wantInfo, tt.wantError)
			}
			completedTurn(t, ctx, c, th.ThreadID, "try again") // the thread survives a failed turn
		})
	}
}

func TestIntegrationApprovals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		decision   codex.Decision
		wantStatus codex.TurnStatus
		wantRan    bool
	}{
		{name: "accept runs the command", decision: codex.DecisionAccept, wantStatus: "completed", wantRan: true},
		{name: "decline lets the model continue", decision: codex.DecisionDecline, wantStatus: "completed"},
		{name: "cancel interrupts the turn", decision: codex.DecisionCancel, wantStatus: "interrupted"},
	}
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), "run it") {
			return codextest.Reply{ToolCall: codextest.ExecCommand("call_approve", "echo APPROVED-$((6*7))")}
		}
		return codextest.DefaultReply(req)
	})
	var mu sync.Mutex
	var asked []codex.ApprovalRequest
	decision := codex.DecisionDecline
	c := startClient(t, m, codextest.Home(t), func(o *codex.Options) {
		o.Approvals = func(_ context.Context, req codex.ApprovalRequest) codex.Decision {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req)
			return decision
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			asked, decision = nil, tt.decision
			mu.Unlock()
			th, err := c.EnsureThread(ctx, "", codex.ThreadConfig{ApprovalPolicy: "untrusted", Sandbox: "danger-full-access"})
			if err != nil {
				t.Fatalf("EnsureThread: %v", err)
			}
			res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "please run it"}, codex.TurnEvents{})
			if err != nil {
				t.Fatalf("RunTurn: %v", err)
			}
			if res.Status != tt.wantStatus {
				t.Fatalf("status = %q (error %+v), want %q", res.Status, res.Error, tt.wantStatus)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 {
				t.Fatalf("approval requests = %d, want 1", len(asked))
			}
			if q := asked[0]; q.Kind != "command" || q.ThreadID != th.ThreadID || q.ItemID != "call_approve" ||
				!strings.Contains(q.Command, "APPROVED-$((6*7))") {
				t.Errorf("approval request = %+v", q)
			}
			reqs := m.RequestsForThread(th.ThreadID)
			ran := false
			for _, r := range reqs {
				if out, ok := r.ToolOutput(); ok && strings.Contains(out, "APPROVED-42") {
					ran = true
				}
			}
			if ran != tt.wantRan {
				t.Errorf("command ran = %v, want %v", ran, tt.wantRan)
			}
			if tt.wantRan && !strings.Contains(res.Text, "APPROVED-42") {
				t.Errorf("final text %q lacks the command's output", res.Text)
			}
		})
	}
}

func TestIntegrationSteerRunningTurn(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		if req.LastUserText() == "tell me a long story" {
			return codextest.Reply{Text: strings.Repeat("once upon a time ", 20), Chunks: 80, ChunkDelay: 25 * time.Millisecond}
		}
		return codextest.DefaultReply(req)
	})
	c := startClient(t, m, codextest.Home(t))
	th := ensure(t, ctx, c, "", codex.OutcomeStarted)

	streaming := make(chan struct{})
	var once sync.Once
	type outcome struct {
		res codex.TurnResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "tell me a long story"}, codex.TurnEvents{
			Delta: func(string) { once.Do(func() { close(streaming) }) },
		})
		done <- outcome{res, err}
	}()
	select {
	case <-streaming:
	case <-ctx.Done():
		t.Fatal("the long answer never started streaming")
	}
	if err := c.Steer(ctx, th.ThreadID, "STEERED-XYZ"); err != nil {
		t.Fatalf("Steer: %v", err)
	}
	got := <-done
	if got.err != nil || got.res.Status != "completed" {
		t.Fatalf("RunTurn: status %q, err %v", got.res.Status, got.err)
	}
	if !strings.HasSuffix(got.res.Text, "ECHO: STEERED-XYZ") {
		t.Errorf("final text = %q, want the answer to the steer", got.res.Text)
	}
	reqs := m.RequestsForThread(th.ThreadID)
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2 (the cut stream and the steered one)", len(reqs))
	}
	steered := reqs[1]
	if steered.LastUserText() != "STEERED-XYZ" || !strings.Contains(steered.InputText(), "tell me a long story") {
		t.Errorf("steered request: last user text %q; want the steer after the original prompt", steered.LastUserText())
	}
	if steered.TurnMetadata("turn_id") != reqs[0].TurnMetadata("turn_id") {
		t.Error("the steer started a new turn instead of landing in the running one")
	}
	if err := c.Steer(ctx, th.ThreadID, "too late"); !errors.Is(err, codex.ErrNoActiveTurn) {
		t.Errorf("Steer after the turn ended: %v, want ErrNoActiveTurn", err)
	}
}

// TestIntegrationTurnCwdMovesTheThread: turn/start with a cwd makes that
// turn's model request, and the later ones, name the new directory as the
// environment's cwd, and under workspace-write as the writable directory in
// place of the old one (so turn/start needs no sandboxPolicy of its own); a
// thread resumed by another process without a cwd keeps it (docs/codex-app-server.md §11).
func TestIntegrationTurnCwdMovesTheThread(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	home := codextest.Home(t)
	first, second := t.TempDir(), t.TempDir()
	c := startClient(t, m, home)
	th, err := c.EnsureThread(ctx, "", codex.ThreadConfig{Cwd: first, Sandbox: "workspace-write"})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		cwd  string // TurnInput.Cwd
		want string // the directory the request must name
	}{
		{"thread/start's cwd", "", first},
		{"moved by turn/start", second, second},
		{"kept by the next turn", "", second},
	}
	for _, s := range steps {
		if _, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "where now?", Cwd: s.cwd}, codex.TurnEvents{}); err != nil {
			t.Fatalf("%s: RunTurn: %v", s.name, err)
		}
		req := lastRequest(t, m, th.ThreadID)
		if got := req.Environment("cwd"); got != s.want {
			t.Fatalf("%s: the model request's cwd = %q, want %s:\n%s", s.name, got, s.want, req.InputText())
		}
		fs := req.Environment("filesystem")
		for _, dir := range []string{first, second} {
			writable := strings.Contains(fs, `<entry access="write"><path>`+dir+`</path></entry>`)
			if writable != (dir == s.want) {
				t.Errorf("%s: %s writable = %v, want only %s writable:\n%s", s.name, dir, writable, s.want, fs)
			}
		}
	}

	closeClient(t, c)
	c = startClient(t, m, home)
	ensure(t, ctx, c, th.ThreadID, codex.OutcomeResumed)
	if _, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "and after a restart?"}, codex.TurnEvents{}); err != nil {
		t.Fatal(err)
	}
	if req := lastRequest(t, m, th.ThreadID); req.Environment("cwd") != second {
		t.Fatalf("after resume the model request's cwd = %q, want %s:\n%s", req.Environment("cwd"), second, req.InputText())
	}
}

// The real binary: a bare CODEX_HOME without a provider override has no
// account and needs an OpenAI login; the fake provider of codextest needs
// none. A device-code login cannot reach auth.openai.com offline: it fails
// at once with the app-server's reason (measured: 47 ms).
func TestRealAccountRead(t *testing.T) {
	t.Parallel()
	m := codextest.NewModel(t)
	ctx := integrationContext(t)
	bare := startClient(t, m, codextest.Home(t), func(o *codex.Options) { o.Args, o.Env = nil, nil })
	a, err := bare.Account(ctx)
	if err != nil {
		t.Fatalf("bare Account: %v", err)
	}
	if a.Type != "" || !a.RequiresOpenAIAuth || a.Usable() {
		t.Errorf("bare CODEX_HOME account = %+v, want none with OpenAI auth required", a)
	}
	// Offline (as here) auth.openai.com is unreachable; with a network a
	// real device code comes back. Either way the answer has a shape.
	login, err := bare.StartLogin(ctx)
	switch {
	case err != nil && !strings.Contains(codex.RPCMessage(err), "device code"):
		t.Errorf("StartLogin error = %v, want the device-code failure", err)
	case err == nil && (login.VerificationURL == "" || login.UserCode == ""):
		t.Errorf("StartLogin = %+v, want a URL and a code", login)
	}

	provider := startClient(t, m, codextest.Home(t))
	a, err = provider.Account(ctx)
	if err != nil {
		t.Fatalf("provider Account: %v", err)
	}
	if a.RequiresOpenAIAuth || !a.Usable() {
		t.Errorf("fake provider account = %+v, want no OpenAI auth required", a)
	}
	if n := len(m.Requests()); n != 0 {
		t.Errorf("reading the account sent %d model requests", n)
	}
}

// The real binary: a bare CODEX_HOME logged in with an API key through
// the app-server becomes usable (account/updated says so), and its turns
// then reach the OpenAI provider with that key (openai_base_url points it
// at the fake model; codex first tries a WebSocket there, which the fake
// does not speak, and falls back to HTTP after five tries).
func TestRealAPIKeyLogin(t *testing.T) {
	t.Parallel()
	m := codextest.NewModel(t)
	ctx := integrationContext(t)
	updated := make(chan codex.AccountUpdate, 4)
	c := startClient(t, m, codextest.Home(t), func(o *codex.Options) {
		o.Args = []string{"-c", `approval_policy="never"`, "-c", "check_for_update_on_startup=false",
			"-c", "analytics.enabled=false", "-c", "features.plugins=false"}
		o.Args = append(o.Args, "-c", fmt.Sprintf("openai_base_url=%q", strings.TrimRight(m.URL, "/")+"/v1"))
		o.Env = nil
		o.OnAccount = func(u codex.AccountUpdate) { updated <- u }
	})
	if a, err := c.Account(ctx); err != nil || a.Usable() {
		t.Fatalf("before the login: %+v, %v; want an account that needs a login", a, err)
	}
	const key = "sk-test-login-key"
	if err := c.LoginAPIKey(ctx, key); err != nil {
		t.Fatalf("LoginAPIKey: %v", err)
	}
	select {
	case u := <-updated:
		if u.AuthMode != "apikey" && u.AuthMode != "apiKey" {
			t.Errorf("account/updated %+v, want the API key's auth mode", u)
		}
	case <-ctx.Done():
		t.Fatal("no account/updated after the login")
	}
	a, err := c.Account(ctx)
	if err != nil || a.Type != "apiKey" || !a.Usable() {
		t.Fatalf("after the login: %+v, %v; want a usable apiKey account", a, err)
	}
	th := ensure(t, ctx, c, "", codex.OutcomeStarted)
	res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "hello"}, codex.TurnEvents{})
	if err != nil || res.Status != "completed" {
		for _, r := range m.Requests() {
			t.Logf("model request %s %v", r.Path, r.Header)
		}
		t.Fatalf("turn after the login: %s, %v", res.Status, err)
	}
	req := lastRequest(t, m, th.ThreadID)
	if got := req.Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("the model request's Authorization = %q, want the logged-in key", got)
	}
	// codex itself would take an empty key (and fail every turn after).
	for _, bad := range []string{"", "  ", "sk-two words"} {
		if err := c.LoginAPIKey(ctx, bad); err == nil {
			t.Errorf("LoginAPIKey(%q) = nil, want a refusal", bad)
		}
	}
	if a, err := c.Account(ctx); err != nil || a.Type != "apiKey" {
		t.Errorf("after the refused keys: %+v, %v; want the first login kept", a, err)
	}
}
