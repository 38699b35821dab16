package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/feature/schedules"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// answer sends a command on the API lane and returns its answer.
func (h *harness) answer(t *testing.T, lane, id, text string) string {
	t.Helper()
	h.send(t, lane, id, text)
	return h.p.replyTo(t, id).Text
}

// fireNow fires what is due at the fake clock's time, as the loop's tick
// would.
func (h *harness) fireNow() {
	for _, f := range h.g.cfg.Features {
		if s, ok := f.(*schedules.Schedules); ok {
			s.FireDue(context.Background())
			return
		}
	}
	panic("harness: no schedules feature")
}

// newScheduleHarness is a harness whose schedules run with cfg.
func newScheduleHarness(t *testing.T, cfg schedules.Config, opts ...harnessOpt) *harness {
	t.Helper()
	st := newFakeStore()
	f := schedules.New(cfg, st)
	return newHarnessOn(t, st, append(opts, func(c *Config) { c.Features = append(c.Features, f) })...)
}

// nextContaining waits for the next outbound containing s, skipping others.
func nextContaining(t *testing.T, p *fakePlatform, s string) Outbound {
	t.Helper()
	for {
		if o := p.next(t); strings.Contains(o.Text, s) {
			return o
		}
	}
}

func TestAtFiresOnceAtItsTime(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	if got := h.answer(t, "a", "c1", "/at 10m check the build"); got != "⏰ Scheduled s1, at Mon 30 Nov 12:10 UTC: check the build" {
		t.Errorf("/at answered %q", got)
	}
	h.fireNow()
	if turns := h.cx.turnTexts(); len(turns) != 0 {
		t.Fatalf("fired before its time: %q", turns)
	}
	h.clock.Advance(10 * time.Minute)
	h.fireNow()
	h.fireNow() // a second tick at the same time finds nothing due
	reply := nextContaining(t, h.p, "check the build")
	if reply.Text != "⏰ at Mon 30 Nov 12:10 UTC: re: check the build" {
		t.Errorf("the firing's reply is %q, want it to say what started it", reply.Text)
	}
	if turns := h.cx.turnTexts(); len(turns) != 1 || !strings.HasSuffix(turns[0], ":check the build") {
		t.Errorf("turns %q, want the prompt once", turns)
	}
	if got := h.answer(t, "a", "c2", "/schedules"); !strings.HasPrefix(got, "No schedules here") {
		t.Errorf("after its firing /schedules says %q", got)
	}
}

func TestEveryFiresOnItsGridAndSkipsWhatWasMissedTooLong(t *testing.T) {
	h := newScheduleHarness(t, schedules.Config{CatchUp: time.Hour})
	h.start(t)
	if got := h.answer(t, "a", "c1", "/every 30m tick"); got != "⏰ Scheduled s1, every 30m; next Mon 30 Nov 12:30 UTC: tick" {
		t.Errorf("/every answered %q", got)
	}
	h.clock.Advance(30*time.Minute + 2*time.Second) // a little late: on time still
	h.fireNow()
	if r := nextContaining(t, h.p, "tick"); r.Text != "⏰ every 30m: re: tick" {
		t.Errorf("first firing's reply %q", r.Text)
	}
	if got := h.answer(t, "a", "c2", "/schedules"); !strings.Contains(got, "s1 · next Mon 30 Nov 13:00 UTC · every 30m · by u1 · tick") {
		t.Errorf("/schedules after one firing:\n%s", got)
	}
	// Down for three hours: the missed firing is older than catch_up.
	h.clock.Advance(3 * time.Hour)
	h.fireNow()
	skipped := nextContaining(t, h.p, "Skipped s1")
	if want := "⏰ Skipped s1, due Mon 30 Nov 13:00 UTC: gatewayd was down and it is older than schedules.catch_up (1h0m0s). Next: Mon 30 Nov 16:00 UTC."; skipped.Text != want {
		t.Errorf("skip notice %q, want %q", skipped.Text, want)
	}
	if turns := h.cx.turnTexts(); len(turns) != 1 {
		t.Errorf("turns %q, want only the first firing", turns)
	}
	// Down across the next due time, for less than catch_up: caught up, once.
	h.clock.Advance(31 * time.Minute) // 15:30:02 → 16:01:02; due 16:00
	h.fireNow()
	h.fireNow()
	nextContaining(t, h.p, "⏰ every 30m: re: tick")
	if turns := h.cx.turnTexts(); len(turns) != 2 {
		t.Errorf("turns %q, want the caught-up firing once", turns)
	}
}

func TestFiringQueuesBehindARunningTurn(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.BusyMode = BusySteer }) // a firing is never steered in
	release := make(chan struct{})
	h.cx.run = func(ctx context.Context, thread, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		if text == "long work" {
			<-release
		}
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	h.start(t)
	h.answer(t, "a", "c1", "/at 1m scheduled prompt")
	h.send(t, "a", "m1", "long work")
	waitFor(t, "the long turn to start", func() bool { return len(h.cx.turnTexts()) == 1 })
	h.clock.Advance(time.Minute)
	h.fireNow()
	waitFor(t, "the firing to wait in the queue", func() bool { return h.st.inboundStatusByText("scheduled prompt") == store.InboundReceived })
	if turns := h.cx.turnTexts(); len(turns) != 1 {
		t.Fatalf("turns %q while the first runs, want the firing queued", turns)
	}
	close(release)
	nextContaining(t, h.p, "⏰ at Mon 30 Nov 12:01 UTC: re: scheduled prompt")
}

func TestUnscheduleIsTheMakersInARoom(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	room := Address{Platform: "test", Kind: LaneGroup, ChatID: "g"}
	say := func(id, sender, text string) string {
		t.Helper()
		if _, err := h.g.Deliver(context.Background(), Inbound{Address: room, MessageID: id, SenderID: sender, DisplayName: sender + "-name",
			Text: text, Mentioned: true}); err != nil {
			t.Fatal(err)
		}
		return h.p.replyTo(t, id).Text
	}
	say("c1", "ana", "/every day 09:00 standup notes")
	if got := say("c2", "ben", "/unschedule s1"); got != "Only ana-name or an admin can decide this; s1 stays." {
		t.Errorf("a bystander's /unschedule answered %q", got)
	}
	if got := say("c3", "ana", "/unschedule s1"); got != "Removed s1: standup notes" {
		t.Errorf("the maker's /unschedule answered %q", got)
	}
	if got := say("c4", "ana", "/unschedule s1"); !strings.HasPrefix(got, "No schedule s1 here") {
		t.Errorf("a second /unschedule answered %q", got)
	}
}

func TestScheduleCommandsRefuseBadInput(t *testing.T) {
	h := newScheduleHarness(t, schedules.Config{MaxPerLane: 1}.WithDefaults())
	h.start(t)
	for _, tc := range []struct{ text, want string }{
		{"/at tomorrowish do it", "Usage: /at WHEN PROMPT."},
		{"/at 10m", "Usage: /at WHEN PROMPT."},
		{"/every fortnightly do it", "day 09:00"},
		{"/every 10s do it", "schedules.min_interval"},
		{"/unschedule", "Usage: /unschedule ID"},
		{"/tz Mars/Olympus", `unknown time zone "Mars/Olympus"`},
	} {
		if got := h.answer(t, "a", tc.text, tc.text); !strings.Contains(got, tc.want) {
			t.Errorf("%s answered %q, want it to contain %q", tc.text, got, tc.want)
		}
	}
	h.answer(t, "a", "ok", "/at 1h fine")
	if got := h.answer(t, "a", "full", "/at 2h one too many"); !strings.Contains(got, "schedules.max_per_lane") {
		t.Errorf("past the limit /at answered %q", got)
	}
	h.st.failOn("AddSchedule", store.ErrDiskFull)
	h.answer(t, "a", "c9", "/unschedule s1")
	if got := h.answer(t, "a", "c10", "/at 1h on a full disk"); !strings.Contains(got, "nothing was scheduled") {
		t.Errorf("on a full disk /at answered %q", got)
	}
}

func TestTimeZoneOfTheLane(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	if got := h.answer(t, "a", "c1", "/tz Europe/Berlin"); !strings.HasPrefix(got, "Time zone: Europe/Berlin (now 13:00 CET)") {
		t.Errorf("/tz answered %q", got)
	}
	if got := h.answer(t, "a", "c2", "/at 15:30 tea"); got != "⏰ Scheduled s1, at Mon 30 Nov 15:30 CET: tea" {
		t.Errorf("/at in Berlin answered %q", got)
	}
	all, _ := h.st.Schedules(context.Background(), "v1:test:a")
	if want := time.Date(2026, 11, 30, 14, 30, 0, 0, time.UTC); len(all) != 1 || !all[0].NextAt.Equal(want) {
		t.Errorf("stored %+v, want due at %s", all, want)
	}
	if got := h.answer(t, "a", "c3", "/status"); !strings.Contains(got, "Schedules: 1 (next s1 at Mon 30 Nov 15:30 CET)") {
		t.Errorf("/status lacks the schedule:\n%s", got)
	}
}

func TestTriggerRunsOncePerID(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	ctx := context.Background()
	if _, _, err := h.g.Trigger(ctx, Trigger{Lane: "v1:telegram:dm:404", ID: "hook:x:1", Text: "hi"}); !errors.Is(err, ErrUnknownLane) {
		t.Errorf("a lane never seen: %v", err)
	}
	h.answer(t, "a", "c1", "/status") // the lane exists now
	tr := Trigger{Lane: "v1:test:a", ID: "hook:ci:d1", Text: "Build 42 failed", Origin: "🪝 ci", SenderID: "hook:ci", SenderName: "webhook ci"}
	id, dup, err := h.g.Trigger(ctx, tr)
	if err != nil || dup || id == 0 {
		t.Fatalf("Trigger = %d, %v, %v", id, dup, err)
	}
	if r := nextContaining(t, h.p, "Build 42"); r.Text != "🪝 ci: re: Build 42 failed" {
		t.Errorf("the trigger's reply %q", r.Text)
	}
	again, dup, err := h.g.Trigger(ctx, tr)
	if err != nil || !dup || again != id {
		t.Errorf("the same delivery again = %d, %v, %v; want a duplicate of %d", again, dup, err, id)
	}
	tr.ID, tr.Text = "hook:ci:d2", "/reset"
	if _, _, err := h.g.Trigger(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if r := nextContaining(t, h.p, "/reset"); r.Text != "🪝 ci: re: /reset" {
		t.Errorf("a trigger's text ran as %q, want it a prompt, never a command", r.Text)
	}
}

// inboundStatusByText is the state of the inbound row with this text.
func (s *fakeStore) inboundStatusByText(text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, row := range s.inbound {
		if row.Text == text {
			return row.State
		}
	}
	return ""
}

// TestScheduleOfAMakerNoLongerAllowedIsPaused: once its maker is taken
// off the allowlist (a SIGHUP reload), a due /every or /at does not fire:
// it is paused, the lane told once, and /schedules says why; another
// member's schedule still fires.
func TestScheduleOfAMakerNoLongerAllowedIsPaused(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	room := Address{Platform: "test", Kind: LaneGroup, ChatID: "g"}
	say := func(id, sender, text string) string {
		t.Helper()
		if _, err := h.g.Deliver(context.Background(), Inbound{Address: room, MessageID: id, SenderID: sender, DisplayName: sender + "-name",
			Text: text, Mentioned: true}); err != nil {
			t.Fatal(err)
		}
		return h.p.replyTo(t, id).Text
	}
	say("c1", "ana", "/every 30m ana's report")
	say("c2", "ana", "/at 45m ana's reminder")
	say("c3", "ben", "/every 30m ben's report")
	h.p.mu.Lock()
	h.p.allow = func(in Inbound) bool { return in.SenderID != "ana" } // the reload took ana off
	h.p.mu.Unlock()

	h.clock.Advance(30 * time.Minute)
	h.fireNow()
	paused := nextContaining(t, h.p, "Paused s1")
	if want := "⏰ Paused s1 (every 30m, by ana-name), due Mon 30 Nov 12:30 UTC: its maker is no longer allowed. /unschedule s1 removes it."; paused.Text != want {
		t.Errorf("pause notice %q, want %q", paused.Text, want)
	}
	nextContaining(t, h.p, "⏰ every 30m: re: ben's report")
	h.clock.Advance(30 * time.Minute) // ana's /at is due too, and s1 again
	h.fireNow()
	nextContaining(t, h.p, "Paused s2")
	nextContaining(t, h.p, "⏰ every 30m: re: ben's report")

	for _, turn := range h.cx.turnTexts() {
		if strings.Contains(turn, "ana's") {
			t.Errorf("a schedule of ana's fired: %q", turn)
		}
	}
	got := say("c4", "ben", "/schedules")
	for _, want := range []string{
		"s1 · paused: its maker is no longer allowed · every 30m · by ana-name · ana's report",
		"s2 · paused: its maker is no longer allowed · once · by ana-name · ana's reminder",
		"s3 · next Mon 30 Nov 13:30 UTC · every 30m · by ben-name · ben's report",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("/schedules lacks %q:\n%s", want, got)
		}
	}
	h.clock.Advance(time.Hour) // paused stays paused, and is not told again
	h.fireNow()
	// The lane's outbox is sent in order: anything the firing queued
	// comes before the answer to a command sent after it.
	if _, err := h.g.Deliver(context.Background(), Inbound{Address: room, MessageID: "c6", SenderID: "ben", Text: "/status",
		Mentioned: true}); err != nil {
		t.Fatal(err)
	}
	for {
		o := h.p.next(t)
		if strings.Contains(o.Text, "Paused") {
			t.Errorf("told again: %q", o.Text)
		}
		if o.InReplyTo == "c6" {
			if !strings.Contains(o.Text, "Schedules: 3 (next s3 at") || !strings.Contains(o.Text, "2 paused") {
				t.Errorf("/status does not show the paused schedules:\n%s", o.Text)
			}
			break
		}
	}
}
