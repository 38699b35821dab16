package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A lane's transcript pages newest first across a reset (two sessions),
// each page strictly below the last id of the one before, without gaps.
func TestTranscriptPageAcrossSessions(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "paged")
	other := mustEnsure(t, s, "other")
	if _, err := s.CommitTurn(ctx, turn(other, "o1", "not mine", "not mine either")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitTurn(ctx, turn(l, "t1", "first question", "first answer")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	l2, err := s.ResetLane(ctx, l.SessionKey, "new")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitTurn(ctx, turn(l2, "t2", "second question", "second answer")); err != nil {
		t.Fatal(err)
	}

	var got []Message
	before := int64(0)
	for range 10 {
		page, err := s.TranscriptPage(ctx, l.SessionKey, before, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		before = page[len(page)-1].ID
	}
	var texts []string
	for i, m := range got {
		texts = append(texts, m.Text)
		if i > 0 && m.ID >= got[i-1].ID {
			t.Errorf("ids not strictly descending: %d after %d", m.ID, got[i-1].ID)
		}
	}
	want := "second answer|second question|first answer|first question"
	if strings.Join(texts, "|") != want {
		t.Errorf("transcript = %q, want %q", strings.Join(texts, "|"), want)
	}
	if got[0].SessionID == got[3].SessionID {
		t.Errorf("both sessions have id %d; the reset should have started a new one", got[0].SessionID)
	}
	if _, err := s.TranscriptPage(ctx, "v1:api:nobody", 0, 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown lane: err = %v, want ErrNotFound", err)
	}
}

// The page query walks the (session_key, id) index instead of sorting the
// lane's messages for every page.
func TestTranscriptPageUsesTheKeyIndex(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "reads SQLite's EXPLAIN QUERY PLAN")
	s, _ := openTestStore(t)
	rows, err := s.readDB.QueryContext(context.Background(), `EXPLAIN QUERY PLAN SELECT `+messageColumns+` FROM messages m
		WHERE m.session_key = ? AND m.id < ? ORDER BY m.id DESC LIMIT ?`, "k", 10, 5)
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
	joined := strings.Join(plan, "; ")
	if !strings.Contains(joined, "messages_by_key") || strings.Contains(joined, "TEMP B-TREE") {
		t.Errorf("plan = %q, want a search on messages_by_key without a sort", joined)
	}
}

func TestFindLanesFilters(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	mustEnsure(t, s, "alpha")
	clock.Advance(time.Second)
	if _, err := s.EnsureLane(ctx, LaneKey{SessionKey: "v1:api:Beta_%", Platform: "api", Kind: "api", ChatID: "Beta_%"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	titled := mustEnsure(t, s, "gamma")
	if err := s.SetMeta(ctx, titled.SessionKey, map[string]string{"title": "Release Planning"}); err != nil {
		t.Fatal(err)
	}
	keys := func(f LaneFilter) string {
		t.Helper()
		lanes, err := s.FindLanes(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range lanes {
			out = append(out, l.SessionKey)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name string
		f    LaneFilter
		want string
	}{
		{"all, newest first", LaneFilter{}, "v1:telegram:topic:100:gamma,v1:api:Beta_%,v1:telegram:topic:100:alpha"},
		{"limit", LaneFilter{Limit: 1}, "v1:telegram:topic:100:gamma"},
		{"platform", LaneFilter{Platform: "api"}, "v1:api:Beta_%"},
		{"key substring, any case", LaneFilter{Contains: "ALPH"}, "v1:telegram:topic:100:alpha"},
		{"title substring", LaneFilter{Contains: "planning"}, "v1:telegram:topic:100:gamma"},
		{"pattern characters are literal", LaneFilter{Contains: "_%"}, "v1:api:Beta_%"},
		{"both filters", LaneFilter{Platform: "api", Contains: "alpha"}, ""},
	}
	for _, tt := range tests {
		if got := keys(tt.f); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// BenchmarkTranscriptPage measures one page of 50 from the middle of a
// 20,000-message lane among 200,000 messages of 100 lanes, with the
// (session_key, id) index of migration 13 and without it.
func BenchmarkTranscriptPage(b *testing.B) {
	const lanes, perLane = 100, 2_000
	s := openAt(b, testDBPath(b), Options{pgBatchTimeout: 10 * time.Minute})
	populateLanes(b, s, lanes)
	err := s.write(context.Background(), func(ctx context.Context, q querier) error {
		// Interleaved like a busy gateway: lane i's rows are spread over the table.
		_, err := q.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO messages (session_id, session_key, role, text, turn_id, created_at)
			SELECT 1 + i % ?, 'v1:bench:' || (1 + i % ?), 'user', 'message ' || i, 't' || i, i FROM n`,
			lanes*perLane*10-1, lanes, lanes)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	run := func(b *testing.B) {
		var latencies []time.Duration
		for b.Loop() {
			t0 := time.Now()
			page, err := s.TranscriptPage(ctx, "v1:bench:7", lanes*perLane*5, 50)
			latencies = append(latencies, time.Since(t0))
			if err != nil || len(page) != 50 {
				b.Fatalf("page: %d messages, %v", len(page), err)
			}
		}
		reportPercentiles(b, latencies, "page")
	}
	b.Run("index", run)
	if err := s.write(ctx, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, "DROP INDEX messages_by_key")
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Run("no-index", run)
}
