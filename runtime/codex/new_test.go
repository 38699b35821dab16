package codex

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// New runs no process: Close on a client never started returns at once,
// and a closed client does not start.
func TestNewStartsNoProcessAndClosesWithoutOne(t *testing.T) {
	opts, logPath := fakeOptions(t, fakeConfig{})
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := os.Stat(logPath); !os.IsNotExist(err) {
		t.Errorf("New started the fake app-server (its log: %v)", err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Start(context.Background()); err == nil {
		t.Error("Start after Close succeeded")
	}
}

// Handlers bound before Start hear the app-server; Handle after Start
// panics instead of racing the requests it would route.
func TestHandleBeforeStartBindsTheHandlers(t *testing.T) {
	opts, _ := fakeOptions(t, fakeConfig{})
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	completed := make(chan LoginResult, 1)
	if err := c.Handle(Handlers{OnLogin: func(r LoginResult) { completed <- r }}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if _, err := c.StartLogin(ctx); err != nil {
		t.Fatalf("StartLogin: %v", err)
	}
	select {
	case r := <-completed:
		if r.LoginID != "login-1" {
			t.Errorf("login completed = %+v", r)
		}
	case <-ctx.Done():
		t.Fatal("account/login/completed never reached the handler bound before Start")
	}
	if err := c.Start(ctx); err == nil {
		t.Error("a second Start succeeded")
	}
	if err := c.Handle(Handlers{OnLogin: func(LoginResult) {}}); !errors.Is(err, ErrStarted) {
		t.Errorf("Handle after Start = %v, want ErrStarted", err)
	}
}
