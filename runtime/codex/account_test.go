package codex

import (
	"context"
	"testing"
	"time"
)

func TestAccountReadsTheAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		mode       string
		wantType   string
		wantUsable bool
	}{
		{"logged in", "", "chatgpt", true},
		{"no account, OpenAI auth required", "no-account", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := startFake(t, fakeConfig{mode: tt.mode})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			a, err := fc.Account(ctx)
			if err != nil {
				t.Fatalf("Account: %v", err)
			}
			if a.Type != tt.wantType || a.Usable() != tt.wantUsable || !a.RequiresOpenAIAuth {
				t.Errorf("Account = %+v (usable %v), want type %q usable %v", a, a.Usable(), tt.wantType, tt.wantUsable)
			}
		})
	}
}

// StartLogin returns the device code, and the notifications that follow
// reach the Options hooks although login/completed's error field is a
// string, not a turn error.
func TestStartLoginAndItsNotifications(t *testing.T) {
	t.Parallel()
	updated := make(chan AccountUpdate, 1)
	completed := make(chan LoginResult, 1)
	fc := startFake(t, fakeConfig{tweak: func(o *Options) {
		o.OnAccount = func(u AccountUpdate) { updated <- u }
		o.OnLogin = func(r LoginResult) { completed <- r }
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	login, err := fc.StartLogin(ctx)
	if err != nil {
		t.Fatalf("StartLogin: %v", err)
	}
	if login != (Login{ID: "login-1", VerificationURL: "https://auth.example/device", UserCode: "ABCD-1234"}) {
		t.Errorf("login = %+v", login)
	}
	select {
	case r := <-completed:
		if !r.Success || r.LoginID != "login-1" {
			t.Errorf("login completed = %+v", r)
		}
	case <-ctx.Done():
		t.Fatal("account/login/completed never reached LoginCompleted")
	}
	select {
	case u := <-updated:
		if u.AuthMode != "chatgpt" || u.PlanType != "plus" {
			t.Errorf("account updated = %+v", u)
		}
	case <-ctx.Done():
		t.Fatal("account/updated never reached AccountUpdated")
	}
}
