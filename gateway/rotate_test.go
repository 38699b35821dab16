package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/feature/rotate"
)

func (h *harness) sendAt(t *testing.T, addr Address, id, text string) {
	t.Helper()
	if _, err := h.g.Deliver(context.Background(), Inbound{Address: addr, MessageID: id, SenderID: "u1", Text: text}); err != nil {
		t.Fatalf("Deliver(%s): %v", id, err)
	}
}

// withRotation runs the harness with rotation by policy.
func withRotation(st *fakeStore, policy config.Rotate) harnessOpt {
	return func(c *Config) {
		c.Features = append(c.Features, rotate.New(policy, st))
	}
}

func TestRotation(t *testing.T) {
	idle := config.Rotate{Every: time.Hour}
	daily := config.Rotate{Daily: true, Hour: 4}
	dm := Address{Platform: "test", Kind: LaneDM, ChatID: "d1"}
	topic := Address{Platform: "test", Kind: LaneTopic, ChatID: "c1", TopicID: "7"}
	tests := []struct {
		name       string
		rotate     config.Rotate
		addr       Address
		quiet      time.Duration // gap that must not rotate
		gap        time.Duration // further gap that crosses the boundary
		keepThread bool
	}{
		{"idle topic keeps thread", idle, topic, 59 * time.Minute, 2 * time.Hour, true},
		{"idle dm starts fresh", idle, dm, 30 * time.Minute, 61 * time.Minute, false},
		{"daily api lane keeps thread", daily, apiAddr("a"), 15 * time.Hour, 2 * time.Hour, true}, // 12:00 → 03:00 → 05:00
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newFakeStore()
			h := newHarnessOn(t, st, withRotation(st, tc.rotate))
			h.start(t)
			key := tc.addr.SessionKey()
			h.sendAt(t, tc.addr, "m1", "one")
			collect(t, h.p, "m1")
			first := h.st.lane(key)

			h.clock.Advance(tc.quiet)
			h.sendAt(t, tc.addr, "m2", "two")
			if _, notices := collect(t, h.p, "m2"); len(notices) != 0 {
				t.Fatalf("before the boundary: notices %q", notices)
			}
			h.clock.Advance(tc.gap)
			h.sendAt(t, tc.addr, "m3", "three")
			got, notices := collect(t, h.p, "m3")
			if len(notices) != 1 {
				t.Fatalf("after the boundary: notices %q, want exactly one", notices)
			}
			if tc.keepThread != strings.Contains(notices[0], "same thread") ||
				tc.keepThread == strings.Contains(notices[0], "new Codex thread") {
				t.Errorf("notice %q does not match keepThread=%v", notices[0], tc.keepThread)
			}
			after := h.st.lane(key)
			if after.SessionID == first.SessionID {
				t.Error("session not rotated")
			}
			three := h.g.host.textOf(context.Background(), Inbound{Address: tc.addr, SenderID: "u1", Text: "three"}) // "[u1]: three" in a group place
			if got["m3"].Text != "re: "+three {
				t.Errorf("m3 answered %q", got["m3"].Text)
			}
			_, released, turns := h.cx.snapshot()
			last := turns[len(turns)-1]
			if tc.keepThread {
				if last != first.ThreadID+":"+three || len(released) != 0 || after.Generation != first.Generation {
					t.Errorf("kept-thread rotation: turns %v released %v gen %d→%d", turns, released, first.Generation, after.Generation)
				}
			} else if strings.HasPrefix(last, first.ThreadID+":") || len(released) != 1 || released[0] != first.ThreadID {
				t.Errorf("fresh rotation: turns %v released %v, want a new thread and the old released", turns, released)
			}
			// The archived session keeps its rows; the new one starts with m3.
			if user, _ := h.st.rows(key); user != 3 {
				t.Errorf("user rows over all sessions %d, want 3 (nothing deleted)", user)
			}
			if msgs, _ := h.st.Transcript(context.Background(), key, 10); len(msgs) != 2 || msgs[0].Text != three {
				t.Errorf("current session %+v, want only the m3 turn", msgs)
			}
			// The next message right after does not rotate again.
			h.sendAt(t, tc.addr, "m4", "four")
			if _, notices := collect(t, h.p, "m4"); len(notices) != 0 {
				t.Errorf("second message after rotation: notices %q", notices)
			}
			if n := len(h.st.rotationRows()); n != 1 {
				t.Errorf("rotations %v, want 1", h.st.rotationRows())
			}
		})
	}
}

func TestRotationOffNeverRotates(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.send(t, "a", "m1", "one")
	collect(t, h.p, "m1")
	h.clock.Advance(1000 * time.Hour)
	h.send(t, "a", "m2", "two")
	if _, notices := collect(t, h.p, "m2"); len(notices) != 0 || len(h.st.rotationRows()) != 0 {
		t.Errorf("rotation off: notices %q rotations %v", notices, h.st.rotationRows())
	}
}

func TestRotationStatusLine(t *testing.T) {
	tests := []struct {
		name   string
		rotate config.Rotate
		want   string
	}{
		{"off", config.Rotate{}, "Rotation: off"},
		{"idle", config.Rotate{Every: 24 * time.Hour}, "Rotation: after 24h0m0s idle"},
		{"daily", config.Rotate{Daily: true, Hour: 4, Minute: 30}, "Rotation: daily at 04:30"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newFakeStore()
			h := newHarnessOn(t, st, withRotation(st, tc.rotate))
			h.start(t)
			h.send(t, "a", "s1", "/status")
			if o := h.p.replyTo(t, "s1"); !strings.Contains(o.Text, tc.want) {
				t.Errorf("/status lacks %q:\n%s", tc.want, o.Text)
			}
		})
	}
}
