package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Account is the app-server's answer to account/read.
type Account struct {
	// Type is the account kind ("apiKey", "chatgpt", "amazonBedrock",
	// "gcp"); "" when codex has no account.
	Type     string
	Email    string // chatgpt accounts only
	PlanType string // chatgpt accounts only
	// RequiresOpenAIAuth: the configured provider needs an OpenAI login
	// (the built-in "openai" one). A custom provider in
	// CODEX_HOME/config.toml (or -c model_provider=…) answers false.
	RequiresOpenAIAuth bool
}

// Usable reports whether turns can reach a model: either codex holds an
// account, or its provider does not need one. A bare CODEX_HOME is not
// usable; its turns retry "Reconnecting… n/5" for minutes (docs/codex-app-server.md §11).
func (a Account) Usable() bool { return a.Type != "" || !a.RequiresOpenAIAuth }

// AccountUpdate is an account/updated notification: the auth mode and plan
// after a login or logout (both "" when logged out).
type AccountUpdate struct {
	AuthMode string `json:"authMode"`
	PlanType string `json:"planType"`
}

// Login is a device-code login started by StartLogin: the user opens
// VerificationURL and enters UserCode; account/login/completed with ID
// follows.
type Login struct {
	ID              string
	VerificationURL string
	UserCode        string
}

// LoginResult is an account/login/completed notification.
type LoginResult struct {
	LoginID string `json:"loginId"`
	Success bool   `json:"success"`
	Error   string `json:"error"`
}

// AccountUpdatedHandler hears account/updated; LoginCompletedHandler hears
// account/login/completed. Both run on their own goroutine, never the
// stdout reader's, so they may call the client (e.g. Account).
type (
	AccountUpdatedHandler func(AccountUpdate)
	LoginCompletedHandler func(LoginResult)
)

// Account reads the app-server's account (account/read). It waits through
// a restart for up to ctx.
func (c *Client) Account(ctx context.Context) (Account, error) {
	var out struct {
		Account *struct {
			Type     string `json:"type"`
			Email    string `json:"email"`
			PlanType string `json:"planType"`
		} `json:"account"`
		RequiresOpenAIAuth bool `json:"requiresOpenaiAuth"`
	}
	if _, err := c.callLive(ctx, "account/read", map[string]any{}, &out); err != nil {
		return Account{}, err
	}
	a := Account{RequiresOpenAIAuth: out.RequiresOpenAIAuth}
	if out.Account != nil {
		a.Type, a.Email, a.PlanType = out.Account.Type, out.Account.Email, out.Account.PlanType
	}
	return a, nil
}

// StartLogin starts a ChatGPT device-code login (account/login/start with
// type chatgptDeviceCode). It is not retried after a restart: a second
// login would hand the user a second code.
func (c *Client) StartLogin(ctx context.Context) (Login, error) {
	cn, err := c.liveConn(ctx)
	if err != nil {
		return Login{}, err
	}
	var out struct {
		Type            string `json:"type"`
		LoginID         string `json:"loginId"`
		VerificationURL string `json:"verificationUrl"`
		UserCode        string `json:"userCode"`
	}
	if err := cn.call(ctx, "account/login/start", map[string]any{"type": "chatgptDeviceCode"}, &out); err != nil {
		return Login{}, c.closedOr(err)
	}
	if out.VerificationURL == "" || out.UserCode == "" {
		return Login{}, fmt.Errorf("codex: account/login/start answered type %q without a verification URL and code", out.Type)
	}
	return Login{ID: out.LoginID, VerificationURL: out.VerificationURL, UserCode: out.UserCode}, nil
}

// LoginAPIKey logs codex in with an OpenAI API key (account/login/start
// with type apiKey): codex stores it in CODEX_HOME and answers at once;
// account/updated follows. The key is never part of an error: codex's
// refusal is returned as its message alone.
func (c *Client) LoginAPIKey(ctx context.Context, key string) error {
	if err := CheckAPIKey(key); err != nil {
		return err
	}
	cn, err := c.liveConn(ctx)
	if err != nil {
		return err
	}
	var out struct {
		Type string `json:"type"`
	}
	if err := cn.call(ctx, "account/login/start", map[string]any{"type": "apiKey", "apiKey": key}, &out); err != nil {
		return c.closedOr(err)
	}
	if out.Type != "apiKey" {
		return fmt.Errorf("codex: account/login/start with an API key answered type %q", out.Type)
	}
	return nil
}

// CheckAPIKey refuses what cannot be an API key: codex takes even an empty
// one, and every turn would then fail.
func CheckAPIKey(key string) error {
	if key == "" || strings.ContainsAny(key, " \t\r\n") {
		return errors.New("codex: an API key is one word without spaces, not empty")
	}
	return nil
}

// routeAccount hands the account notifications to their Options hooks and
// reports whether method was one of them.
func (c *Client) routeAccount(method string, params json.RawMessage) bool {
	switch method {
	case "account/updated":
		var u AccountUpdate
		if err := json.Unmarshal(params, &u); err == nil && c.opts.OnAccount != nil {
			go c.opts.OnAccount(u)
		}
		return true
	case "account/login/completed":
		var r LoginResult
		if err := json.Unmarshal(params, &r); err == nil && c.opts.OnLogin != nil {
			go c.opts.OnLogin(r)
		}
		return true
	}
	return false
}

// RPCMessage returns the app-server's own message of an RPC error in err,
// else err's text: what a user can act on ("failed to request device code…").
func RPCMessage(err error) string {
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) {
		return rpcErr.Message
	}
	return err.Error()
}
