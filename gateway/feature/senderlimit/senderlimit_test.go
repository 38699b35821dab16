package senderlimit

import (
	"testing"
	"time"
)

// TestSenderLimitWindowsAreBounded: windows are per lane and sender, and
// ended ones are swept, so idle senders cost nothing.
func TestSenderLimitWindowsAreBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := New(1, nil)
	s.now = func() time.Time { return now }
	for _, k := range []senderKey{{"l1", "a"}, {"l1", "b"}, {"l2", "a"}} {
		if _, over := s.count(k); over {
			t.Fatalf("first message of %v refused", k)
		}
	}
	if _, over := s.count(senderKey{"l1", "a"}); !over {
		t.Fatal("second message of l1/a within the limit, want past it")
	}
	if !s.refused(senderKey{"l1", "a"}) || s.refused(senderKey{"l1", "a"}) {
		t.Fatal("the first refusal of l1/a is not the only one told")
	}
	now = now.Add(senderWindowLen)
	if _, over := s.count(senderKey{"l3", "c"}); over {
		t.Fatal("a new sender refused")
	}
	if n := s.size(); n != 1 {
		t.Errorf("%d windows kept after a minute, want 1 (ended ones swept)", n)
	}
}
