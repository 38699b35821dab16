package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The thread-level operations a coding tool needs: fork a
// thread (for /fork and the ephemeral side question of /btw), rewind its
// history (/undo), list its turns, review changes on it (/review) and list
// the threads of a directory (/threads, including those the CLI or an IDE
// started on the same CODEX_HOME).

// ForkConfig is how ForkThread makes the fork.
type ForkConfig struct {
	// Thread are the fork's overrides, sent as with thread/resume (cwd,
	// model, sandbox or confinement).
	Thread ThreadConfig
	// Ephemeral forks live in memory only (no rollout): the side question
	// of /btw, gone when released.
	Ephemeral bool
}

// ForkThread forks parentID (thread/fork): a new thread with the parent's
// history so far, loaded in the current process, so RunTurn works on it at
// once. The parent need not be loaded: codex reads its rollout.
func (c *Client) ForkThread(ctx context.Context, parentID string, cfg ForkConfig) (string, error) {
	fctx, cancel := context.WithTimeout(ctx, c.opts.ResumeTimeout)
	defer cancel()
	params := cfg.Thread.params(map[string]any{"threadId": parentID, "excludeTurns": true})
	if cfg.Ephemeral {
		params["ephemeral"] = true
	}
	var out struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	cn, err := c.callLive(fctx, "thread/fork", params, &out)
	if err != nil {
		return "", fmt.Errorf("codex: fork %s: %w", parentID, err)
	}
	if out.Thread.ID == "" || out.Thread.ID == parentID {
		return "", fmt.Errorf("codex: thread/fork of %s answered thread %q", parentID, out.Thread.ID)
	}
	c.threadFor(out.Thread.ID).markLoaded(cn.epoch)
	return out.Thread.ID, nil
}

// RevertThread rewinds a loaded thread's history to before beforeTurnID
// (thread/revert): that turn and every later one are gone from what the
// model sees next, and from the rollout, so a resume after a restart
// does not bring them back. Files are not touched.
func (c *Client) RevertThread(ctx context.Context, threadID, beforeTurnID string) error {
	if ts := c.lookup(threadID); ts != nil {
		ts.mu.Lock()
		busy := ts.turn != nil
		ts.mu.Unlock()
		if busy {
			return fmt.Errorf("codex: revert %s: %w", threadID, ErrTurnActive)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	var out json.RawMessage
	if _, err := c.callLive(rctx, "thread/revert", map[string]any{"threadId": threadID, "beforeTurnId": beforeTurnID}, &out); err != nil {
		return fmt.Errorf("codex: revert %s before %s: %w", threadID, beforeTurnID, err)
	}
	return nil
}

// TurnSummary is one turn of a thread as thread/turns/list gives it.
type TurnSummary struct {
	ID, Status string
	// UserText is the turn's user message; "" for turns without one
	// (a compaction, a review).
	UserText string
}

// maxTurnPages bounds Turns against a server that never ends its pages.
const maxTurnPages = 1000

// Turns lists a loaded thread's turns, oldest first (thread/turns/list,
// every page).
func (c *Client) Turns(ctx context.Context, threadID string) ([]TurnSummary, error) {
	tctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	var turns []TurnSummary
	cursor := ""
	for range maxTurnPages {
		params := map[string]any{"threadId": threadID, "limit": 100, "sortDirection": "asc"}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page struct {
			Data       []rawTurn `json:"data"`
			NextCursor *string   `json:"nextCursor"`
		}
		if _, err := c.callLive(tctx, "thread/turns/list", params, &page); err != nil {
			return nil, fmt.Errorf("codex: turns of %s: %w", threadID, err)
		}
		for _, t := range page.Data {
			turns = append(turns, t.summary())
		}
		if page.NextCursor == nil || *page.NextCursor == "" || len(page.Data) == 0 {
			return turns, nil
		}
		cursor = *page.NextCursor
	}
	return nil, fmt.Errorf("codex: turns of %s: more than %d pages", threadID, maxTurnPages)
}

// rawTurn is a Turn as thread/turns/list sends it, with what Turns reads.
type rawTurn struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Items  []struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"items"`
}

func (t rawTurn) summary() TurnSummary {
	s := TurnSummary{ID: t.ID, Status: t.Status}
	for _, it := range t.Items {
		if it.Type != "userMessage" {
			continue
		}
		for _, part := range it.Content {
			if part.Type == "text" && part.Text != "" {
				s.UserText = part.Text
				return s
			}
		}
	}
	return s
}

// ReviewTarget is what review/start reviews.
type ReviewTarget struct {
	// Kind is "uncommittedChanges" (the working tree: staged, unstaged
	// and untracked), "baseBranch" (Branch: the changes since it) or
	// "commit" (SHA: the changes it introduced).
	Kind   string
	Branch string
	SHA    string
}

// Review target kinds.
const (
	ReviewUncommitted = "uncommittedChanges"
	ReviewBaseBranch  = "baseBranch"
	ReviewCommit      = "commit"
)

func (r ReviewTarget) param() (map[string]any, error) {
	switch r.Kind {
	case ReviewUncommitted:
		return map[string]any{"type": r.Kind}, nil
	case ReviewBaseBranch:
		if r.Branch == "" {
			return nil, errors.New("codex: review of a base branch needs the branch")
		}
		return map[string]any{"type": r.Kind, "branch": r.Branch}, nil
	case ReviewCommit:
		if r.SHA == "" {
			return nil, errors.New("codex: review of a commit needs its id")
		}
		return map[string]any{"type": r.Kind, "sha": r.SHA}, nil
	}
	return nil, fmt.Errorf("codex: unknown review target %q", r.Kind)
}

// RunReview runs codex's reviewer on a loaded thread (review/start,
// delivered inline: the review is a turn of the thread) and waits for it
// as RunTurn waits for a turn, with the same watchdog, interrupt and
// busy-thread rules. The result's Text is the review's findings.
func (c *Client) RunReview(ctx context.Context, threadID string, target ReviewTarget, ev TurnEvents) (TurnResult, error) {
	tp, err := target.param()
	if err != nil {
		return TurnResult{ThreadID: threadID}, err
	}
	return c.runStarted(ctx, threadID, "review/start", map[string]any{"threadId": threadID, "target": tp, "delivery": "inline"}, ev)
}

// ThreadFilter selects the threads ListThreads returns.
type ThreadFilter struct {
	// Cwds: only threads whose working directory is exactly one of these
	// (none: every directory).
	Cwds  []string
	Limit int // at most this many (default 50)
}

// ThreadSummary is one thread as thread/list gives it.
type ThreadSummary struct {
	ID, Name, Preview, Cwd, Source string
	CreatedAt, UpdatedAt           time.Time
}

// ListThreads lists the stored threads of a directory, newest first
// (thread/list sorted by update time), whoever started them: the gateway,
// the Codex CLI or an IDE on the same CODEX_HOME.
func (c *Client) ListThreads(ctx context.Context, f ThreadFilter) ([]ThreadSummary, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	lctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	var threads []ThreadSummary
	cursor := ""
	for len(threads) < limit {
		params := map[string]any{"limit": limit - len(threads), "sortKey": "updated_at"}
		if len(f.Cwds) > 0 {
			params["cwd"] = f.Cwds
		}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page struct {
			Data       []rawThread `json:"data"`
			NextCursor *string     `json:"nextCursor"`
		}
		if _, err := c.callLive(lctx, "thread/list", params, &page); err != nil {
			return nil, fmt.Errorf("codex: list threads: %w", err)
		}
		for _, t := range page.Data {
			threads = append(threads, t.summary())
		}
		if page.NextCursor == nil || *page.NextCursor == "" || len(page.Data) == 0 {
			break
		}
		cursor = *page.NextCursor
	}
	if len(threads) > limit {
		threads = threads[:limit]
	}
	return threads, nil
}

// rawThread is a Thread as thread/list sends it. Times are Unix seconds.
type rawThread struct {
	ID        string          `json:"id"`
	Name      *string         `json:"name"`
	Preview   string          `json:"preview"`
	Cwd       string          `json:"cwd"`
	Source    json.RawMessage `json:"source"`
	CreatedAt int64           `json:"createdAt"`
	UpdatedAt int64           `json:"updatedAt"`
}

func (t rawThread) summary() ThreadSummary {
	s := ThreadSummary{ID: t.ID, Preview: t.Preview, Cwd: t.Cwd, Source: sourceName(t.Source),
		CreatedAt: time.Unix(t.CreatedAt, 0), UpdatedAt: time.Unix(t.UpdatedAt, 0)}
	if t.Name != nil {
		s.Name = *t.Name
	}
	return s
}

// sourceName reads a thread's source: a plain string ("cli", "vscode",
// "appServer") or an object naming a sub-agent.
func sourceName(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		for k := range obj {
			return k
		}
	}
	return ""
}
