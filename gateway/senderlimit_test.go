package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/feature/senderlimit"
	"github.com/gatewayd/gatewayd/store"
)

func withSenderLimit(st *fakeStore, max int, admins ...string) harnessOpt {
	return func(c *Config) {
		c.Features = append(c.Features, senderlimit.New(max, st))
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

// Exchange finds a recorded message as the real store does (its answer
// is not kept here).
func (s *fakeStore) Exchange(_ context.Context, platform, messageID string) (store.Exchange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.inIdx[platform+"\x00"+messageID]
	if !ok {
		return store.Exchange{}, store.ErrNotFound
	}
	return store.Exchange{InboundRow: s.inbound[id-1]}, nil
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
	st := newFakeStore()
	h := newHarnessOn(t, st, withSenderLimit(st, 20, "boss"))
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
	st := newFakeStore()
	h := newHarnessOn(t, st, withSenderLimit(st, 2))
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

// TestSenderLimitRedeliveryIsADuplicate: a message recorded before and
// delivered again past the limit (an adapter that did not see the first
// answer) is the duplicate it is, never refused: it runs once, and its
// sender does not hear it was refused.
func TestSenderLimitRedeliveryIsADuplicate(t *testing.T) {
	st := newFakeStore()
	h := newHarnessOn(t, st, withSenderLimit(st, 2))
	h.start(t)
	lane := dmAddr("c1")
	h.deliverAs(t, lane, "u1", "m1", "first")
	h.deliverAs(t, lane, "u1", "m2", "second")
	dup, err := h.g.Deliver(context.Background(), Inbound{Address: lane, MessageID: "m1", SenderID: "u1", Text: "first"})
	if err != nil || !dup {
		t.Fatalf("redelivery past the limit: duplicate %v, %v; want a duplicate", dup, err)
	}
	h.deliverAs(t, lane, "u1", "m3", "third") // refused, told
	// The outbox sends in order: a notice for the redelivery would come first.
	if n := nextContaining(t, h.p, "lanes.max_per_minute"); n.InReplyTo != "m3" {
		t.Errorf("limit notice %+v, want it to answer m3", n)
	}
	waitFor(t, "two turns", func() bool { return len(h.cx.turnCounts()) == 2 })
	if turns := h.cx.turnCounts(); turns["first"] != 1 || turns["second"] != 1 || turns["third"] != 0 {
		t.Errorf("turns %v, want first and second once, third never", turns)
	}
}
