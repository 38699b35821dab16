// Package storetest opens real SQLite stores for the tests of the
// packages that read one (the console's routes, the command line's).
package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// Open opens an empty store in a temporary directory, closed when the
// test ends.
func Open(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "gatewayd.db"), store.Options{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// OpenWithTurn opens a store with two lanes, v1:api:default and a
// Telegram topic, and one committed turn in the API lane ("remember 42",
// answered "noted: 42" on thread thr-1).
func OpenWithTurn(t testing.TB) *store.Store {
	t.Helper()
	ctx := context.Background()
	st := Open(t)
	for _, k := range []store.LaneKey{
		{SessionKey: "v1:api:default", Platform: "api", Kind: "api", ChatID: "default"},
		{SessionKey: "v1:telegram:topic:-100:42", Platform: "telegram", Kind: "topic", ChatID: "-100", TopicID: "42"},
	} {
		if _, err := st.EnsureLane(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	lane, err := st.Lane(ctx, "v1:api:default")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CommitTurn(ctx, store.CompletedTurn{
		SessionKey: lane.SessionKey, Generation: lane.Generation, SessionID: lane.SessionID,
		ThreadID: "thr-1", TurnID: "turn-1", UserText: "remember 42", AssistantText: "noted: 42",
		Status: "completed",
	}); err != nil {
		t.Fatal(err)
	}
	return st
}
