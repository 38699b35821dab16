package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestLastTurnUsage commits turns with and without usage on real SQLite and
// reads back the latest one that has some, across a reopen; a new session
// (/new) starts with none.
func TestLastTurnUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testDBPath(t)
	s := openAt(t, path, Options{})
	l := mustEnsure(t, s, "a")
	if _, ok, err := s.LastTurnUsage(ctx, l.SessionKey); err != nil || ok {
		t.Fatalf("usage of a lane without turns = %v, %v; want none", ok, err)
	}
	first := turn(l, "turn-1", "hi", "hello")
	first.Usage = UsageRecord{TotalTokens: 1050, ContextWindow: 258400, TurnTokens: 1050, InputTokens: 1000,
		CachedInputTokens: 200, OutputTokens: 50, ReasoningTokens: 10, ContextTokens: 1050}
	second := turn(l, "turn-2", "again", "hello again")
	second.Usage = UsageRecord{TotalTokens: 5250, ContextWindow: 258400, TurnTokens: 4200, InputTokens: 4100,
		CachedInputTokens: 2900, OutputTokens: 100, ReasoningTokens: 25, ContextTokens: 2170}
	failed := turn(l, "turn-3", "more", "Codex usage limit reached")
	failed.Status = "failed" // failed before the model counted anything: no usage
	for _, ct := range []CompletedTurn{first, second, failed} {
		if _, err := s.CommitTurn(ctx, ct); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, Options{})
	got, ok, err := s.LastTurnUsage(ctx, l.SessionKey)
	if err != nil || !ok {
		t.Fatalf("LastTurnUsage = %v, %v; want the second turn's", ok, err)
	}
	if got.TurnID != "turn-2" || got.Status != "completed" || got.Usage != second.Usage || got.At.IsZero() {
		t.Errorf("LastTurnUsage = %+v, want turn-2 with %+v", got, second.Usage)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM messages WHERE role = 'user' AND turn_tokens > 0"); n != 0 {
		t.Errorf("%d user rows carry usage, want none (it belongs to the assistant row)", n)
	}

	if _, err := s.ResetLane(ctx, l.SessionKey, "/new"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.LastTurnUsage(ctx, l.SessionKey); err != nil || ok {
		t.Errorf("usage after /new = %v, %v; want none (a new session)", ok, err)
	}
	if _, _, err := s.LastTurnUsage(ctx, "v1:telegram:topic:100:nope"); err == nil {
		t.Error("LastTurnUsage of an unknown lane succeeded")
	}
}

// TestLaneUsageByDayAndSender commits turns of two senders on two days
// under a fake clock and sums them by lane, day and sender, across a /new
// and a reopen; another lane's turns and turns without usage count apart.
func TestLaneUsageByDayAndSender(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testDBPath(t)
	day := time.Date(2031, 3, 14, 0, 0, 0, 0, time.UTC)
	clock := day.Add(9 * time.Hour)
	s := openAt(t, path, Options{Now: func() time.Time { return clock }})
	l := mustEnsure(t, s, "a")
	other := mustEnsure(t, s, "b")
	n := 0
	commit := func(l Lane, sender string, u UsageRecord) {
		t.Helper()
		n++
		id, _, err := s.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: fmt.Sprint("m", n),
			SessionKey: l.SessionKey, SenderID: sender, Text: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		ct := turn(l, fmt.Sprint("turn-", n), "hi", "hello")
		ct.InboundID, ct.Usage = id, u
		if _, err := s.CommitTurn(ctx, ct); err != nil {
			t.Fatal(err)
		}
	}
	ann1 := UsageRecord{TurnTokens: 1050, InputTokens: 1000, CachedInputTokens: 200, OutputTokens: 50, ReasoningTokens: 10}
	bob := UsageRecord{TurnTokens: 300, InputTokens: 280, OutputTokens: 20}
	ann2 := UsageRecord{TurnTokens: 4200, InputTokens: 4100, CachedInputTokens: 2900, OutputTokens: 100, ReasoningTokens: 25}
	commit(l, "ann", ann1)
	commit(other, "ann", ann2) // another lane: not this one's
	commit(l, "bob", bob)
	if _, err := s.ResetLane(ctx, l.SessionKey, "/new"); err != nil {
		t.Fatal(err)
	}
	l, _ = s.Lane(ctx, l.SessionKey)
	clock = day.Add(23*time.Hour + 59*time.Minute)
	commit(l, "ann", ann2) // the new session's: still the same day
	commit(l, "ann", UsageRecord{})
	clock = day.Add(24 * time.Hour)
	commit(l, "ann", ann1) // the next day
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, Options{})

	tests := []struct {
		name     string
		sender   string
		from, to time.Time
		want     UsageTotals
	}{
		{"lane's day", "", day, day.AddDate(0, 0, 1), UsageTotals{Turns: 4, Tokens: 5550, Input: 5380,
			CachedInput: 3100, Output: 170, Reasoning: 35}},
		{"ann's day", "ann", day, day.AddDate(0, 0, 1), UsageTotals{Turns: 3, Tokens: 5250, Input: 5100,
			CachedInput: 3100, Output: 150, Reasoning: 35}},
		{"bob's day", "bob", day, day.AddDate(0, 0, 1), UsageTotals{Turns: 1, Tokens: 300, Input: 280, Output: 20}},
		{"next day", "", day.AddDate(0, 0, 1), day.AddDate(0, 0, 2), UsageTotals{Turns: 1, Tokens: 1050, Input: 1000,
			CachedInput: 200, Output: 50, Reasoning: 10}},
		{"month", "", day.AddDate(0, 0, -13), day.AddDate(0, 0, 18), UsageTotals{Turns: 5, Tokens: 6600, Input: 6380,
			CachedInput: 3300, Output: 220, Reasoning: 45}},
		{"nobody's", "carl", day, day.AddDate(0, 1, 0), UsageTotals{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.LaneUsage(ctx, l.SessionKey, tc.sender, tc.from, tc.to)
			if err != nil || got != tc.want {
				t.Errorf("LaneUsage(%q, %v..%v) = %+v, %v; want %+v", tc.sender, tc.from, tc.to, got, err, tc.want)
			}
		})
	}
}

// The day's sum reads the lane's rows of that time through its index, not
// the whole messages table.
func TestLaneUsageUsesItsIndex(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "reads SQLite's EXPLAIN QUERY PLAN")
	s, _ := openTestStore(t)
	rows, err := s.readDB.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+laneUsageSQL, "k", 1, 2, "")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if joined := strings.Join(plan, "; "); !strings.Contains(joined, "messages_usage_by_lane") {
		t.Errorf("plan = %q, want a search on messages_usage_by_lane", joined)
	}
}

func TestDayAndMonthStart(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	at := time.Date(2031, 3, 31, 23, 30, 0, 0, time.UTC) // 01:30 on 1 April in Berlin
	tests := []struct {
		name       string
		loc        *time.Location
		day, month time.Time
	}{
		{"UTC", nil, time.Date(2031, 3, 31, 0, 0, 0, 0, time.UTC), time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"Berlin", berlin, time.Date(2031, 4, 1, 0, 0, 0, 0, berlin), time.Date(2031, 4, 1, 0, 0, 0, 0, berlin)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DayStart(at, tc.loc); !got.Equal(tc.day) {
				t.Errorf("DayStart = %v, want %v", got, tc.day)
			}
			if got := MonthStart(at, tc.loc); !got.Equal(tc.month) {
				t.Errorf("MonthStart = %v, want %v", got, tc.month)
			}
		})
	}
}
