package account

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The whole-gateway tests of the account check and /login are in
// gateway/account_test.go; these are the feature's own parts.

// Logins waiting for account/login/completed are bounded: codex may never
// send it (an app-server restart forgets a login), so old waiters go and
// no more than maxPendingLogins stay, the newest.
func TestPendingLoginsAreBounded(t *testing.T) {
	var a accountState
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	waiter := func(i int) loginWaiter {
		return loginWaiter{msgID: fmt.Sprint(i), started: start.Add(time.Duration(i) * time.Second)}
	}
	for i := range maxPendingLogins + 5 {
		a.remember(fmt.Sprint("login-", i), waiter(i))
	}
	if len(a.logins) != maxPendingLogins {
		t.Fatalf("%d logins kept, want %d", len(a.logins), maxPendingLogins)
	}
	for i := range 5 {
		if _, ok := a.logins[fmt.Sprint("login-", i)]; ok {
			t.Errorf("login-%d, among the oldest, was kept", i)
		}
	}
	late := loginWaiter{msgID: "late", started: start.Add(loginWaitLimit + time.Hour)}
	a.remember("late", late)
	if len(a.logins) != 1 || a.logins["late"] != late {
		t.Errorf("after a login past the wait limit of all others: %v, want only the new one", a.logins)
	}
}

// The reason names the codex an operator logs in with: "codex" on PATH, or
// the package's bundled binary by its path.
func TestMissingReasonNamesTheLoginCommand(t *testing.T) {
	for login, want := range map[string]string{
		"":      MissingReason,
		"codex": MissingReason,
		"/usr/lib/gatewayd/codex/bin/codex": strings.Replace(MissingReason, "`codex login",
			"`/usr/lib/gatewayd/codex/bin/codex login", 1),
	} {
		if got := missingReason(login); got != want {
			t.Errorf("missingReason(%q) = %q", login, got)
		}
	}
	if got := missingReason("/opt/codex"); !strings.HasPrefix(got, "Codex is not logged in: run `/opt/codex login --device-auth`") {
		t.Errorf("the reason %q does not name the command first", got)
	}
}
