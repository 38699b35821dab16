package codex

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestEnsureThread(t *testing.T) {
	tests := []struct {
		name        string
		storedID    string
		wantOutcome Outcome
		wantReason  string
		wantErr     error
	}{
		{name: "no stored id starts", wantOutcome: OutcomeStarted},
		{name: "known id resumes", storedID: fmt.Sprintf("0199abcd-%d", time.Now().UnixNano()), wantOutcome: OutcomeResumed},
		{name: "no rollout replaces", storedID: "lost-1", wantOutcome: OutcomeReplaced, wantReason: "no rollout found"},
		{name: "invalid id replaces", storedID: "bad-1", wantOutcome: OutcomeReplaced, wantReason: "invalid session id"},
		{name: "archived replaces", storedID: "archived-1", wantOutcome: OutcomeReplaced, wantReason: "is archived"},
		{name: "active writer is a stale owner", storedID: "writer-1", wantErr: ErrStaleWriter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := sharedFake(t)
			starts := count(fc.received(t), "thread/start")
			ens, err := fc.EnsureThread(testCtx(t), tt.storedID, ThreadConfig{Cwd: "/w", Model: "m"})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if n := count(fc.received(t), "thread/start") - starts; n != 0 {
					t.Errorf("a stale writer must not replace the thread; saw %d thread/start", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ens.Outcome != tt.wantOutcome || !strings.Contains(ens.Reason, tt.wantReason) || ens.ThreadID == "" {
				t.Fatalf("Ensured %+v, want %s with reason %q", ens, tt.wantOutcome, tt.wantReason)
			}
			if tt.wantOutcome == OutcomeReplaced && (ens.PreviousID != tt.storedID || ens.ThreadID == tt.storedID) {
				t.Errorf("Ensured %+v, want a new thread replacing %s", ens, tt.storedID)
			}
			// Loaded now: the next call issues no RPC.
			before := len(fc.received(t))
			again, err := fc.EnsureThread(testCtx(t), ens.ThreadID, ThreadConfig{})
			if err != nil || again.Outcome != OutcomeLoaded || again.ThreadID != ens.ThreadID {
				t.Fatalf("second EnsureThread = %+v, %v", again, err)
			}
			if after := len(fc.received(t)); after != before {
				t.Errorf("OutcomeLoaded sent %d requests", after-before)
			}
			res, err := fc.RunTurn(testCtx(t), ens.ThreadID, TurnInput{Text: "echo ok"}, TurnEvents{})
			if err != nil || res.Text != "ok " {
				t.Errorf("turn on ensured thread = %q, %v", res.Text, err)
			}
		})
	}
}

func TestResumeHasNoShortDeadlineButHonoursCtx(t *testing.T) {
	if got := (Options{}).withDefaults().ResumeTimeout; got < 10*time.Minute {
		t.Errorf("default ResumeTimeout %s, want >= 10m (seed 003)", got)
	}
	fc := startFake(t, fakeConfig{})
	fc.opts.StartTimeout = 50 * time.Millisecond // after the handshake; nothing else reads it now
	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := fc.EnsureThread(ctx, "hang-1", ThreadConfig{})
		errc <- err
	}()
	// Well past StartTimeout: resume must not use the short deadline.
	select {
	case err := <-errc:
		t.Fatalf("resume ended early: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestReleaseForgetsLoadedState(t *testing.T) {
	fc := sharedFake(t)
	tid := fc.newThread(t)
	unsubscribes := count(fc.received(t), "thread/unsubscribe")
	if err := fc.Release(testCtx(t), tid); err != nil {
		t.Fatal(err)
	}
	if n := count(fc.received(t), "thread/unsubscribe") - unsubscribes; n != 1 {
		t.Errorf("saw %d thread/unsubscribe, want 1", n)
	}
	if _, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: "echo x"}, TurnEvents{}); !errors.Is(err, ErrThreadNotLoaded) {
		t.Errorf("RunTurn after Release = %v, want ErrThreadNotLoaded", err)
	}
	ens, err := fc.EnsureThread(testCtx(t), tid, ThreadConfig{})
	if err != nil || ens.Outcome != OutcomeResumed {
		t.Fatalf("EnsureThread after Release = %+v, %v; want resumed", ens, err)
	}
}

// A thread still closing (released just before) is resumed once codex has
// closed it: its refusals are retried, not taken for a lost thread.
func TestResumeRetriesAThreadStillClosing(t *testing.T) {
	fc := sharedFake(t)
	resumes := count(fc.received(t), "thread/resume")
	ens, err := fc.EnsureThread(testCtx(t), "closing-1", ThreadConfig{})
	if err != nil || ens.Outcome != OutcomeResumed || ens.ThreadID != "closing-1" {
		t.Fatalf("EnsureThread = %+v, %v; want closing-1 resumed", ens, err)
	}
	if n := count(fc.received(t), "thread/resume") - resumes; n != 3 {
		t.Errorf("saw %d thread/resume, want 3 (two refused as closing)", n)
	}
}

func TestThreadNotFoundFromServerMarksNotLoaded(t *testing.T) {
	fc := sharedFake(t)
	tid := fc.newThread(t)
	// The server forgot the thread behind our back.
	if err := fc.conn(t).call(testCtx(t), "thread/unsubscribe", map[string]string{"threadId": tid}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: "echo x"}, TurnEvents{}); !errors.Is(err, ErrThreadNotLoaded) {
		t.Fatalf("RunTurn = %v, want ErrThreadNotLoaded", err)
	}
	ens, err := fc.EnsureThread(testCtx(t), tid, ThreadConfig{})
	if err != nil || ens.Outcome != OutcomeResumed {
		t.Fatalf("EnsureThread = %+v, %v; want resumed", ens, err)
	}
}

func TestResumeRetriedOnceWhenProcessDiesMeanwhile(t *testing.T) {
	t.Parallel()
	fc := startFake(t, fakeConfig{})
	ens, err := fc.EnsureThread(testCtx(t), "dieonce-1", ThreadConfig{})
	if err != nil || ens.Outcome != OutcomeResumed {
		t.Fatalf("EnsureThread = %+v, %v; want resumed after one restart", ens, err)
	}
	if fc.Restarts() != 1 {
		t.Errorf("Restarts = %d, want 1", fc.Restarts())
	}
	if n := count(fc.received(t), "thread/resume"); n != 2 {
		t.Errorf("saw %d thread/resume, want 2", n)
	}
}

// An EnsureThread racing a Release waits for the release's
// thread/unsubscribe: the thread it resumes is not unsubscribed behind its
// back, and the next turn runs.
func TestEnsureThreadDuringReleaseResumesAfterTheUnsubscribe(t *testing.T) {
	fc := sharedFake(t)
	tid := fc.newThread(t)
	ctx := testCtx(t)
	fc.fake(t, "fake/hold", map[string]any{"threadId": tid})
	released := make(chan error, 1)
	go func() { released <- fc.Release(ctx, tid) }()
	fc.fake(t, "fake/awaitHeld", map[string]any{"threadId": tid}) // thread/unsubscribe is pending

	type ensured struct {
		ens Ensured
		err error
	}
	ensc := make(chan ensured, 1)
	go func() {
		ens, err := fc.EnsureThread(ctx, tid, ThreadConfig{})
		ensc <- ensured{ens, err}
	}()
	fc.fake(t, "fake/release", map[string]any{"threadId": tid})
	if err := <-released; err != nil {
		t.Fatalf("Release: %v", err)
	}
	if e := <-ensc; e.err != nil || e.ens.Outcome != OutcomeResumed {
		t.Fatalf("EnsureThread = %+v, %v; want resumed", e.ens, e.err)
	}
	if res, err := fc.RunTurn(ctx, tid, TurnInput{Text: "echo still here"}, TurnEvents{}); err != nil || res.Text != "still here " {
		t.Fatalf("RunTurn after the race = %q, %v", res.Text, err)
	}
}
