package store

import (
	"context"
	"testing"
)

// A state value survives a reopen, is replaced by a later one and is gone
// once set to "".
func TestStateSurvivesReopenAndClears(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testDBPath(t)
	s := openAt(t, path, Options{})
	if v, err := s.State(ctx, "pause"); err != nil || v != "" {
		t.Fatalf("State of a name never set = %q, %v; want empty", v, err)
	}
	for _, v := range []string{"first", "second"} {
		if err := s.SetState(ctx, "pause", v); err != nil {
			t.Fatalf("SetState(%q): %v", v, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, Options{})
	if v, err := s.State(ctx, "pause"); err != nil || v != "second" {
		t.Fatalf("State after reopen = %q, %v; want second", v, err)
	}
	if err := s.SetState(ctx, "pause", ""); err != nil {
		t.Fatal(err)
	}
	if v, err := s.State(ctx, "pause"); err != nil || v != "" {
		t.Fatalf("State after clearing = %q, %v; want empty", v, err)
	}
}
