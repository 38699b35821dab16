package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"go.uber.org/zap"
)

// A thread's name (thread/name/set, thread/name/updated; 0.171.0 schema):
// what codex's CLI and IDE list the thread by. thread/name/set names a
// thread whether it is loaded or not (it is kept in codex's state, read
// back with thread/read and thread/resume), refuses an empty name, and
// is answered by thread/name/updated to the client, even when the name
// did not change. A rename made through another app-server process on
// the same CODEX_HOME reaches this one only when the thread is read or
// resumed again: only clients of this process are told at once.

// ThreadName is a thread/name/updated notification.
type ThreadName struct {
	ThreadID string
	// Name is the thread's new name; "" when it was cleared (threadName
	// null).
	Name string
}

// SetThreadName names the thread threadID.
func (c *Client) SetThreadName(ctx context.Context, threadID, name string) error {
	params := map[string]any{"threadId": threadID, "name": name}
	if _, err := c.callLive(ctx, "thread/name/set", params, nil); err != nil {
		return fmt.Errorf("codex: thread/name/set: %w", err)
	}
	return nil
}

// nameWatchers are the functions hearing thread/name/updated.
type nameWatchers struct {
	mu  sync.Mutex
	fns []func(ThreadName)
}

// OnThreadName adds fn to what hears every thread's name updates, in the
// order codex sent them, those answering this client's SetThreadName
// too. It may be called at any time; fn runs on the client's reader and
// must not block (hand slow work to a goroutine).
func (c *Client) OnThreadName(fn func(ThreadName)) {
	c.names.mu.Lock()
	defer c.names.mu.Unlock()
	c.names.fns = append(c.names.fns, fn)
}

// routeThreadName hands thread/name/updated to the name watchers; it
// reports whether method was it.
func (c *Client) routeThreadName(method string, params json.RawMessage) bool {
	if method != "thread/name/updated" {
		return false
	}
	var p struct {
		ThreadID   string  `json:"threadId"`
		ThreadName *string `json:"threadName"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.ThreadID == "" {
		c.log.Warn("codex.thread_name_unreadable", zap.Error(err))
		return true
	}
	u := ThreadName{ThreadID: p.ThreadID, Name: deref(p.ThreadName)}
	c.names.mu.Lock()
	fns := c.names.fns
	c.names.mu.Unlock()
	for _, fn := range fns {
		fn(u)
	}
	return true
}
