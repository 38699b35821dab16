package cluster

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Lines as codex 0.171 writes them, cut down to what the fence reads.
func turnLines(ordinal int, turnID, user, answer string) string {
	return strings.Join([]string{
		`{"ordinal":` + itoa(ordinal) + `,"type":"event_msg","payload":{"type":"task_started","turn_id":"` + turnID + `"}}`,
		`{"ordinal":` + itoa(ordinal+1) + `,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"` + user + `"}]}}`,
		`{"ordinal":` + itoa(ordinal+2) + `,"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + answer + `"}]}}`,
		`{"ordinal":` + itoa(ordinal+3) + `,"type":"event_msg","payload":{"type":"task_complete","turn_id":"` + turnID + `"}}`,
	}, "\n") + "\n"
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestCoversNeedsTheTurnsEnd(t *testing.T) {
	t1 := turnLines(0, "turn-1", "one", "answer one")
	started := t1 + turnLines(4, "turn-2", "two", "answer two")[:strings.Index(turnLines(4, "turn-2", "two", "answer two"), "\n")+1]
	tests := []struct {
		name    string
		rollout string
		turn    string
		want    bool
	}{
		{"ended", t1, "turn-1", true},
		{"only started", started, "turn-2", false},
		{"absent", t1, "turn-9", false},
		{"no turn to cover", "", "", true},
		{"rebuilt", `{"type":"response_item","payload":{"type":"message","id":"gatewayd-rebuilt-turn-3","role":"assistant"}}` + "\n", "turn-3", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Covers([]byte(tt.rollout), tt.turn); got != tt.want {
				t.Errorf("Covers(%s) = %v, want %v", tt.turn, got, tt.want)
			}
		})
	}
}

// A node taking a lane whose owner died between a commit and its ship
// finds the shipped rollout short of the committed turns: they are written
// after it from the transcript, numbered on, in order, and a second
// restore keeps that copy. Turns the shipped rollout holds are not.
func TestRestoreCoveringRebuildsTheUnshippedTurns(t *testing.T) {
	f := newRolloutFixture(t)
	f.appendLines(turnLines(0, "turn-1", "one", "answer one"))
	f.ship()
	ctx := testContext(t)
	committed := []CommittedTurn{ // newest first, as the store gives them
		{TurnID: "turn-3", User: []string{"three", "three, steered"}, Assistant: "answer three"},
		{TurnID: "turn-2", User: []string{"two"}, Assistant: "answer two"},
		{TurnID: "turn-1", User: []string{"one"}, Assistant: "answer one"},
	}
	home := t.TempDir()
	res, err := f.rollouts.RestoreCovering(ctx, home, testThread, committed)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Rebuilt, ",") != "turn-2,turn-3" || res.LocalTail || !res.Written {
		t.Fatalf("RestoreCovering = %+v, want turn-2 and turn-3 rebuilt and written", res)
	}
	got, err := os.ReadFile(home + "/" + testRelPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != 4+5 {
		t.Fatalf("restored %d lines, want the 4 shipped and 5 rebuilt:\n%s", len(lines), got)
	}
	for i, want := range []string{`"ordinal":4,`, `"text":"two"`, `"ordinal":5,`, `"text":"answer two"`, `"text":"three"`, `"text":"three, steered"`, `"ordinal":8,`, `"text":"answer three"`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("rebuilt rollout lacks %s (check %d):\n%s", want, i, got)
		}
	}
	if !Covers(got, "turn-3") || !Covers(got, "turn-2") {
		t.Error("the rebuilt rollout does not cover the turns it rebuilt")
	}
	again, err := f.rollouts.RestoreCovering(ctx, home, testThread, committed)
	if err != nil || again.Written || len(again.Rebuilt) != 0 || !again.LocalTail {
		t.Errorf("second RestoreCovering = %+v, %v; want the local copy (the first rebuild) kept, nothing written", again, err)
	}
}

// A node restarted on its CODEX_HOME after committing a turn it never
// shipped has the turn's real lines: they are kept (not rebuilt), and what
// its copy holds after the committed turn (never committed) is moved aside.
func TestRestoreCoveringTakesTheTurnFromTheLocalCopy(t *testing.T) {
	f := newRolloutFixture(t)
	shipped := turnLines(0, "turn-1", "one", "answer one")
	f.appendLines(shipped)
	f.ship()
	committedTail := turnLines(4, "turn-2", "two", "answer two")
	f.appendLines(committedTail + `{"ordinal":8,"type":"event_msg","payload":{"type":"task_started","turn_id":"turn-cut"}}` + "\n")
	res, err := f.rollouts.RestoreCovering(testContext(t), f.home, testThread,
		[]CommittedTurn{{TurnID: "turn-2", User: []string{"two"}, Assistant: "answer two"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.LocalTail || len(res.Rebuilt) != 0 || len(res.MovedAside) != 1 {
		t.Fatalf("RestoreCovering = %+v, want the local tail kept and the copy moved aside", res)
	}
	assertFile(t, f.path(), []byte(shipped+committedTail))
}

// A live owner hands a lane over only once the shipped rollout covers its
// last committed turn: a turn whose end codex has not written yet is not.
func TestShipCoveringWaitsForTheTurnsEnd(t *testing.T) {
	f := newRolloutFixture(t)
	ctx := testContext(t)
	full := turnLines(0, "turn-1", "one", "answer one")
	cut := strings.LastIndex(strings.TrimSuffix(full, "\n"), "\n") + 1
	f.appendLines(full[:cut])
	if _, err := f.rollouts.ShipCovering(ctx, f.home, testThread, "turn-1", f.lease); !errors.Is(err, ErrTurnNotShipped) {
		t.Fatalf("ShipCovering before the turn's end = %v, want ErrTurnNotShipped", err)
	}
	f.appendLines(full[cut:])
	if got, err := f.rollouts.ShipCovering(ctx, f.home, testThread, "turn-1", f.lease); err != nil || got.From+got.Bytes != int64(len(full)) {
		t.Fatalf("ShipCovering after the turn's end = %+v, %v; want all %d bytes shipped", got, err, len(full))
	}
}
