package codex

import (
	"reflect"
	"testing"
)

// TestTurnReportsRerouteAndGuardianWarning: a turn's model/rerouted and
// guardianWarning reach its Progress callback, in order, and another
// turn's reroute on the same thread does not.
func TestTurnReportsRerouteAndGuardianWarning(t *testing.T) {
	t.Parallel()
	fc := startFake(t, fakeConfig{})
	thread := fc.newThread(t)
	var got []Progress
	res, err := fc.RunTurn(testCtx(t), thread, TurnInput{Text: "reroute"}, TurnEvents{Progress: func(p Progress) {
		if p.Kind == ProgressReroute || p.Kind == ProgressGuardian {
			got = append(got, p)
		}
	}})
	if err != nil || res.Status != TurnCompleted || res.Text != "rerouted answer" {
		t.Fatalf("RunTurn: %+v, %v; want completed with the answer", res, err)
	}
	want := []Progress{
		{Kind: ProgressReroute, Reroute: &Reroute{From: "gpt-asked", To: "gpt-other", Reason: "highRiskCyberActivity"}},
		{Kind: ProgressGuardian, Text: "Automatic approval review denied the requested action."},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("progress = %+v, want %+v", got, want)
	}
}
