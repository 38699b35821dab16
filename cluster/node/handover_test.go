package node

import (
	"context"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/store"
)

// commitOnB commits turn turnID of the lane on node-b, which holds it, as
// the gateway does: on the lane's thread, whose rollout holds the turn.
func (f *restoreFixture) commitOnB(t *testing.T, ctx context.Context, turnID, text string) {
	t.Helper()
	if _, err := f.st.CommitTurn(ctx, store.CompletedTurn{SessionKey: f.key, Generation: f.lane.Generation,
		ThreadID: restoreThread, TurnID: turnID, UserText: text, AssistantText: "ECHO: " + text, Status: "completed",
		Confirm: true, RolloutThread: restoreThread}); err != nil {
		t.Fatal(err)
	}
}

func (f *restoreFixture) shippedOf(t *testing.T, ctx context.Context) string {
	t.Helper()
	var data []byte
	if err := f.c.db.QueryRowContext(ctx, `SELECT COALESCE(string_agg(data, ''::bytea ORDER BY "offset"), ''::bytea)
		FROM rollout_chunks WHERE thread_id = $1`, restoreThread).Scan(&data); err != nil {
		t.Fatal(err)
	}
	return string(data)
}

const (
	turn2Start = `{"type":"event_msg","payload":{"type":"task_started","turn_id":"turn-2"}}` + "\n"
	turn2End   = `{"type":"event_msg","payload":{"type":"task_complete","turn_id":"turn-2"}}` + "\n"
)

// An idle lane placed elsewhere is handed over only once its shipped
// rollout holds the end of its last committed turn: while codex has not
// written it, the owner ships what there is and keeps the lane, and once
// it has, the next round ships it and lets go.
func TestHandOverWaitsUntilTheLastCommittedTurnIsShipped(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	f := newRestoreFixture(t, ctx)
	f.shipFromA(t, ctx, `{"turn":1}`+"\n")
	f.takeFromA(t, ctx)
	local := writeRollout(t, f.home, `{"turn":1}`+"\n"+turn2Start)
	f.commitOnB(t, ctx, "turn-2", "two")

	f.c.release(ctx, f.key)
	if !f.c.Serves(f.key) || len(f.events("cluster.handover_deferred")) != 1 {
		t.Fatalf("release before the turn's end was written: serves %v, %d deferrals; want the lane kept once",
			f.c.Serves(f.key), len(f.events("cluster.handover_deferred")))
	}
	appendLine(t, local, turn2End)
	f.c.release(ctx, f.key)
	if f.c.holds(f.key) {
		t.Fatal("release after the turn's end was written kept the lane")
	}
	if got, want := f.shippedOf(t, ctx), `{"turn":1}`+"\n"+turn2Start+turn2End; got != want {
		t.Errorf("shipped before the hand-over = %q, want %q", got, want)
	}
}

// A rollout that never shows the turn's end does not pin the lane: after
// maxHandOverDeferrals rounds it is handed over anyway (the next owner
// rebuilds the turn), and said so.
func TestHandOverGivesUpWaitingAfterSomeRounds(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	f := newRestoreFixture(t, ctx)
	f.shipFromA(t, ctx, `{"turn":1}`+"\n")
	f.takeFromA(t, ctx)
	writeRollout(t, f.home, `{"turn":1}`+"\n"+turn2Start)
	f.commitOnB(t, ctx, "turn-2", "two")
	for round := 1; round <= maxHandOverDeferrals; round++ {
		f.c.release(ctx, f.key)
		if !f.c.holds(f.key) {
			t.Fatalf("round %d: the lane was handed over before the turn's end was shipped", round)
		}
	}
	f.c.release(ctx, f.key)
	if f.c.holds(f.key) || len(f.events("cluster.handover_unshipped")) != 1 {
		t.Errorf("after %d deferrals: holds %v, cluster.handover_unshipped logged %d times; want the lane handed over, said once",
			maxHandOverDeferrals, f.c.holds(f.key), len(f.events("cluster.handover_unshipped")))
	}
}

// A node leaving ships what its lanes' rollouts gained since their last
// ship (a commit whose ship had not run yet) before it releases them.
func TestLeaveShipsTheLanesRolloutsFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	f := newRestoreFixture(t, ctx)
	f.shipFromA(t, ctx, `{"turn":1}`+"\n")
	f.takeFromA(t, ctx)
	writeRollout(t, f.home, `{"turn":1}`+"\n"+turn2Start+turn2End)
	f.commitOnB(t, ctx, "turn-2", "two")

	f.c.Close()

	db, err := OpenDB(f.dsn) // the node's own pool closed as it left
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var data []byte
	if err := db.QueryRowContext(ctx, `SELECT string_agg(data, ''::bytea ORDER BY "offset") FROM rollout_chunks
		WHERE thread_id = $1`, restoreThread).Scan(&data); err != nil {
		t.Fatal(err)
	}
	if want := `{"turn":1}` + "\n" + turn2Start + turn2End; string(data) != want {
		t.Errorf("shipped after the node left = %q, want %q", data, want)
	}
	if !cluster.Covers(data, "turn-2") {
		t.Error("what was shipped does not cover the turn committed last")
	}
}
