package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func withSenderLimit(max int, admins ...string) harnessOpt {
	return func(c *Config) {
		c.MaxPerMinute = max
		c.QueueLimit = 100 // the queue's own limit is not what is tested
		c.Admins = map[string][]string{"test": admins}
	}
}

func dmAddr(chat string) Address { return Address{Platform: "test", Kind: LaneDM, ChatID: chat} }

// deliverAs sends text as sender in the lane at addr and fails on an error.
func (h *harness) deliverAs(t *testing.T, addr Address, sender, id, text string) {
	t.Helper()
	if _, err := h.g.Deliver(context.Background(), Inbound{Address: addr, MessageID: id, SenderID: sender, Text: text}); err != nil {
		t.Fatalf("Deliver(%s): %v", id, err)
	}
}

// storedIDs is the message ids of the inbox rows, by id.
func (s *fakeStore) storedIDs() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make(map[string]int)
	for _, r := range s.inbound {
		ids[r.MessageID]++
	}
	return ids
}

// turnCounts counts the turns codex ran, by their text.
func (c *fakeCodex) turnCounts() map[string]int {
	_, _, turns := c.snapshot()
	n := make(map[string]int)
	for _, tr := range turns {
		_, text, _ := strings.Cut(tr, ":")
		n[text]++
	}
	return n
}

// TestSenderLimitRefusesPastTheLimit: the 21st message of a minute and
// those after it are refused (not stored, not run) with one notice; the
// 20 before each run once; an admin is exempt; the next minute accepts
// again.
func TestSenderLimitRefusesPastTheLimit(t *testing.T) {
	h := newHarness(t, withSenderLimit(20, "boss"))
	h.start(t)
	lane := dmAddr("c1")
	for i := 1; i <= 25; i++ {
		h.deliverAs(t, lane, "u1", fmt.Sprintf("u1-%d", i), fmt.Sprintf("hello %d", i))
	}
	for i := 1; i <= 22; i++ { // the admin, in the same lane and minute
		h.deliverAs(t, lane, "boss", fmt.Sprintf("boss-%d", i), fmt.Sprintf("boss %d", i))
	}
	waitFor(t, "42 turns", func() bool { return len(h.cx.turnCounts()) == 42 })

	stored := h.st.storedIDs()
	turns := h.cx.turnCounts()
	for i := 1; i <= 25; i++ {
		id, text := fmt.Sprintf("u1-%d", i), fmt.Sprintf("hello %d", i)
		want := 1
		if i > 20 {
			want = 0
		}
		if stored[id] != want || turns[text] != want {
			t.Errorf("%s: stored %d times, run %d times; want %d", id, stored[id], turns[text], want)
		}
	}
	for i := 1; i <= 22; i++ {
		if text := fmt.Sprintf("boss %d", i); turns[text] != 1 {
			t.Errorf("admin's %q ran %d times, want once", text, turns[text])
		}
	}
	notices := h.limitNotices(t, 42)
	if len(notices) != 1 || notices[0].InReplyTo != "u1-21" {
		t.Fatalf("limit notices %+v, want one, answering u1-21", notices)
	}
	if !strings.Contains(notices[0].Text, "not stored, not run") {
		t.Errorf("notice %q does not say the message was refused", notices[0].Text)
	}

	h.clock.Advance(time.Minute)
	h.deliverAs(t, lane, "u1", "u1-next", "next minute")
	waitFor(t, "the next minute's turn", func() bool { return h.cx.turnCounts()["next minute"] == 1 })
}

// limitNotices reads what the platform was sent until replies answers
// came, and returns the notices about the sender limit.
func (h *harness) limitNotices(t *testing.T, replies int) []Outbound {
	t.Helper()
	var notices []Outbound
	for replies > 0 {
		o := h.p.next(t)
		switch {
		case strings.Contains(o.Text, "lanes.max_per_minute"):
			notices = append(notices, o)
		case strings.HasPrefix(o.Text, "re: ") && o.Kind != OutPreview && o.Kind != OutProgress:
			replies--
		}
	}
	// A notice is queued before a later accepted message's reply, but
	// drain what is already sent so a second notice cannot hide.
	for {
		select {
		case o := <-h.p.out:
			if strings.Contains(o.Text, "lanes.max_per_minute") {
				notices = append(notices, o)
			}
		default:
			return notices
		}
	}
}

// TestSenderLimitAPIAnswersTheError: on the API lane the refusal is
// Deliver's error (the request's 429), with the time left in the
// minute, every time; nothing is stored and no notice is queued.
func TestSenderLimitAPIAnswersTheError(t *testing.T) {
	h := newHarness(t, withSenderLimit(2))
	h.start(t)
	h.send(t, "a", "1", "one")
	h.clock.Advance(20 * time.Second)
	h.send(t, "a", "2", "two")
	for _, id := range []string{"3", "4"} {
		_, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: id, SenderID: "u1", Text: "more"})
		var limited *SenderLimitError
		if !errors.As(err, &limited) {
			t.Fatalf("Deliver(%s) = %v, want a *SenderLimitError", id, err)
		}
		if limited.RetryAfter != 40*time.Second || limited.Limit != 2 {
			t.Errorf("Deliver(%s): limit %d, retry after %s; want 2, 40s", id, limited.Limit, limited.RetryAfter)
		}
	}
	if ids := h.st.storedIDs(); ids["3"]+ids["4"] != 0 {
		t.Errorf("refused messages stored: %v", ids)
	}
	h.clock.Advance(40 * time.Second)
	h.send(t, "a", "5", "again") // the window ended
	for _, m := range h.st.outboxRows() {
		if strings.Contains(m.Text, "lanes.max_per_minute") {
			t.Errorf("a limit notice was queued on the API lane: %q", m.Text)
		}
	}
}

// TestSenderLimitWindowsAreBounded: windows are per lane and sender, and
// ended ones are swept, so idle senders cost nothing.
func TestSenderLimitWindowsAreBounded(t *testing.T) {
	clock := newFakeClock()
	s := &senderLimits{max: 1, now: clock.Now, windows: make(map[senderKey]*senderWindow)}
	for _, k := range []senderKey{{"l1", "a"}, {"l1", "b"}, {"l2", "a"}} {
		if ok, _, _ := s.count(k); !ok {
			t.Fatalf("first message of %v refused", k)
		}
	}
	if ok, first, _ := s.count(senderKey{"l1", "a"}); ok || !first {
		t.Fatalf("second message of l1/a: ok %v first %v, want refused, first", ok, first)
	}
	if ok, first, _ := s.count(senderKey{"l1", "a"}); ok || first {
		t.Fatalf("third message of l1/a: ok %v first %v, want refused, not first", ok, first)
	}
	clock.Advance(senderWindowLen)
	if ok, _, _ := s.count(senderKey{"l3", "c"}); !ok {
		t.Fatal("a new sender refused")
	}
	if n := s.size(); n != 1 {
		t.Errorf("%d windows kept after a minute, want 1 (ended ones swept)", n)
	}
}
