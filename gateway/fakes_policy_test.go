package gateway

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

func (s *fakeStore) RotateSession(_ context.Context, key string, gen int64, reason string, keepThread bool) (store.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("RotateSession"); err != nil {
		return store.Lane{}, err
	}
	l := s.lanes[key]
	if l == nil {
		return store.Lane{}, store.ErrNotFound
	}
	if l.Generation != gen {
		return store.Lane{}, store.ErrStaleGeneration
	}
	l.SessionID++
	l.Turns = 0
	l.SessionStartedAt = s.now()
	if !keepThread {
		l.Generation++
		l.ThreadID, l.Binding = "", store.BindingNone
		delete(s.journal, key)
	}
	s.rotations = append(s.rotations, reason+":"+strconv.FormatBool(keepThread))
	return *l, nil
}

func (s *fakeStore) SetMeta(_ context.Context, key string, meta map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lanes[key]
	if l == nil {
		return store.ErrNotFound
	}
	merged := make(map[string]string, len(l.Meta)+len(meta)) // copied: readers hold the old map
	for k, v := range l.Meta {
		merged[k] = v
	}
	for k, v := range meta {
		if v == "" {
			delete(merged, k)
		} else {
			merged[k] = v
		}
	}
	l.Meta = merged
	return nil
}

func (c *fakeCodex) compactCalls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.compacts...)
}

func (s *fakeStore) compactionRows() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.compactions...)
}

func (s *fakeStore) rotationRows() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rotations...)
}

func (s *fakeStore) SetProject(_ context.Context, key, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("SetProject"); err != nil {
		return err
	}
	l := s.lanes[key]
	if l == nil {
		return store.ErrNotFound
	}
	l.Project = name
	return nil
}

func (s *fakeStore) ForgetProject(_ context.Context, key, name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("ForgetProject"); err != nil {
		return false, err
	}
	l := s.lanes[key]
	if l == nil {
		return false, store.ErrNotFound
	}
	if l.Project != name {
		return false, nil
	}
	l.Project = ""
	return true, nil
}

func (s *fakeStore) SetLaneOption(_ context.Context, key string, opt store.LaneOption, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("SetLaneOption"); err != nil {
		return err
	}
	l := s.lanes[key]
	if l == nil {
		return store.ErrNotFound
	}
	switch opt {
	case store.OptionVerbose:
		l.Verbose = value
	case store.OptionModel:
		l.Model = value
	case store.OptionEffort:
		l.Effort = value
	case store.OptionMode:
		l.Mode = value
	case store.OptionTZ:
		l.Timezone = value
	default:
		return fmt.Errorf("fake store: unknown lane option %q", opt)
	}
	return nil
}

// Account is a configured model provider's: usable, no login needed.
func (c *fakeCodex) Account(context.Context) (codex.Account, error) {
	return codex.Account{RequiresOpenAIAuth: false}, nil
}

// StartLogin is refused, as a provider that needs no login would.
func (c *fakeCodex) StartLogin(context.Context) (codex.Login, error) {
	return codex.Login{}, &codex.RPCError{Method: "account/login/start", Code: -32600, Message: "fake: no login needed"}
}

// LoginAPIKey is taken, as codex takes any key.
func (c *fakeCodex) LoginAPIKey(context.Context, string) error { return nil }

// ListModels is an app-server's without model/list: method not found.
func (c *fakeCodex) ListModels(context.Context) ([]codex.Model, error) {
	return nil, fmt.Errorf("codex: model/list: %w", &codex.RPCError{Method: "model/list", Code: -32601, Message: "method not found"})
}

// ModelDefaults is a codex with no model or effort configured.
func (c *fakeCodex) ModelDefaults(context.Context) (codex.ModelDefaults, error) {
	return codex.ModelDefaults{}, nil
}

// RateLimits is refused, as for an account that is not ChatGPT's.
func (c *fakeCodex) RateLimits(context.Context) (codex.RateLimits, error) {
	return codex.RateLimits{}, fmt.Errorf("codex: read rate limits: %w", &codex.RPCError{Method: "account/rateLimits/read",
		Code: -32600, Message: "codex account authentication required to read rate limits"})
}

// LastRateLimits: codex reported no windows.
func (c *fakeCodex) LastRateLimits() (codex.RateLimits, bool) { return codex.RateLimits{}, false }
