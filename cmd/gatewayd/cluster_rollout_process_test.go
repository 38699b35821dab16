package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// waitLogCount waits until event matched at least n times in d's log (logs
// are the only signal a daemon gives of its cluster steps).
func waitLogCount(t *testing.T, d *daemonProc, event string, match func(map[string]any) bool, n int, within time.Duration) {
	t.Helper()
	if got := waitLogged(d, event, match, n, within); len(got) < n {
		t.Fatalf("%s logged %d times, want %d", event, len(got), n)
	}
}

// holdingModel is a fake model that holds every request whose last user
// text has marker until release is closed, telling arrived of each.
func holdingModel(t *testing.T, marker string, arrived chan<- string, release <-chan struct{}) *codextest.Model {
	m := codextest.NewModel(t)
	m.Respond(func(r codextest.Request) codextest.Reply {
		if text := r.LastUserText(); strings.Contains(text, marker) {
			arrived <- text
			select {
			case <-release:
			case <-t.Context().Done():
			}
		}
		return codextest.DefaultReply(r)
	})
	return m
}

// Two daemons on one PostgreSQL, the real app-server, each node its own
// fake model (so every model request names the node that made it), API
// lanes placed on node-1. node-1 is SIGSTOPped in the middle of a turn on
// every lane (the user is told the turn was cut off), past its lease;
// node-2 takes the lanes and answers three more turns on each. node-1 is
// resumed, steps down, and gets its lanes back when node-2 stops cleanly.
// Its next turn on each lane must carry every committed turn, node-2's
// included, and nothing of the turn cut off: node-1 restores the shipped
// rollout over its own copy and resumes that, not the thread its
// app-server still held. Before, each lane lacked node-2's three turns
// and carried the cut-off one.
func TestProcessClusterPausedNodeGetsItsLanesBack(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two daemons")
	}
	dsn := pgtest.Shared(t).NewDatabase(t)
	bin := buildDaemon(t)
	const cutMarker = "CUT-OFF-TURN"
	arrived := make(chan string, 16)
	release := make(chan struct{})
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	m1, m2 := holdingModel(t, cutMarker, arrived, release), codextest.NewModel(t)
	ids := []string{"node-1", "node-2"}
	section := func(id string) map[string]any {
		return map[string]any{"cluster": map[string]any{"node_id": id, "lease_ttl": clusterTTL.String()}}
	}
	n1 := writeClusterNodeWith(t, dsn, ids[0], m1, section(ids[0])).start(t, bin)
	n2 := writeClusterNodeWith(t, dsn, ids[1], m2, section(ids[1])).start(t, bin)
	waitHealthy(t, n1.api, n1.daemonProc)
	waitHealthy(t, n2.api, n2.daemonProc)

	const nLanes = 4
	var lanes []string
	for i := 0; len(lanes) < nLanes && i < 200; i++ {
		name := fmt.Sprintf("back-%d", i)
		if owner, _ := cluster.Place(apiLaneKey(t, name), ids); owner == ids[0] {
			lanes = append(lanes, name)
		}
	}
	if len(lanes) < nLanes {
		t.Fatal("not enough lanes placed on node-1; pick other names")
	}
	turn := func(lane string, i int) string { return fmt.Sprintf("[%s:T%d]", lane, i) }
	ask := func(n *clusterProc, lane string, i int, text string) <-chan apiAnswer {
		return postLane(n, lane, fmt.Sprintf("%s-m%d", lane, i), text, false)
	}
	answered := func(lane string, i int, a apiAnswer) bool { // on the lanes' goroutines: no Fatal
		if a.err != nil || a.code != http.StatusOK || !strings.Contains(a.reply.Reply, turn(lane, i)) {
			t.Errorf("lane %s turn %d: %d %v %q", lane, i, a.code, a.err, a.body)
			return false
		}
		return true
	}
	forLanes := func(fn func(lane string)) {
		t.Helper()
		var wg sync.WaitGroup
		for _, lane := range lanes {
			wg.Go(func() { fn(lane) })
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}

	// Turn 1 on node-1, shipped.
	forLanes(func(lane string) { answered(lane, 1, <-ask(n1, lane, 1, "remember "+turn(lane, 1))) })
	for _, lane := range lanes {
		waitLogCount(t, n1.daemonProc, "cluster.shipped", laneIs(apiLaneKey(t, lane)), 1, 30*time.Second)
	}

	// Turn 2 reaches node-1's model on every lane; node-1 is paused there
	// and its app-server, still running, finishes the turns into its own
	// rollouts while node-2 takes the lanes and cuts the turns off.
	cut := map[string]<-chan apiAnswer{}
	for _, lane := range lanes {
		cut[lane] = ask(n2, lane, 2, cutMarker+" "+turn(lane, 2))
	}
	for range lanes {
		select {
		case <-arrived:
		case <-time.After(60 * time.Second):
			t.Fatal("turn 2 did not reach node-1's model on every lane")
		}
	}
	if err := n1.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := true
	t.Cleanup(func() {
		if paused {
			_ = n1.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	letGo()
	for _, lane := range lanes {
		a := <-cut[lane]
		if a.code != http.StatusServiceUnavailable || !strings.Contains(a.body, "send it again") {
			t.Fatalf("lane %s, turn 2 with its node paused: %d %v %q; want 503, cut off", lane, a.code, a.err, a.body)
		}
	}

	// Turns 3 to 5 on node-2, each shipped.
	forLanes(func(lane string) {
		for i := 3; i <= 5 && answered(lane, i, <-ask(n2, lane, i, "remember "+turn(lane, i))); i++ {
		}
	})
	for _, lane := range lanes {
		waitLogCount(t, n2.daemonProc, "cluster.shipped", laneIs(apiLaneKey(t, lane)), 3, 30*time.Second)
		if _, ok := m2.LastRequestWith(turn(lane, 5)); !ok {
			t.Fatalf("lane %s: turn 5 was not answered by node-2's model", lane)
		}
	}

	// node-1 resumes and steps down; node-2 stops cleanly and node-1 takes
	// the lanes back.
	if err := n1.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	paused = false
	for _, lane := range lanes {
		waitLogCount(t, n1.daemonProc, "cluster.lane_dropped", laneIs(apiLaneKey(t, lane)), 1, 60*time.Second)
	}
	if code := n2.terminate(t, 60*time.Second); code != 0 {
		t.Fatalf("node-2 exit %d after SIGTERM", code)
	}

	// Turn 6, sent to node-1, which takes each lane back for it: its
	// model request holds turns 1, 3, 4, 5, not 2.
	forLanes(func(lane string) { answered(lane, 6, <-ask(n1, lane, 6, "what do you remember? "+turn(lane, 6))) })
	for _, lane := range lanes {
		if n := len(logEvents(n1.daemonProc, "cluster.lane_taken", laneIs(apiLaneKey(t, lane)))); n != 2 {
			t.Errorf("node-1 took lane %s %d times, want 2 (at the start, and back)", lane, n)
		}
	}
	var missingTotal, cutTotal int
	for _, lane := range lanes {
		req, ok := m1.LastRequestWith(turn(lane, 6))
		if !ok {
			t.Fatalf("lane %s: node-1's model got no request for turn 6", lane)
		}
		in := req.InputText()
		var missing []int
		for _, i := range []int{1, 3, 4, 5} {
			if !strings.Contains(in, turn(lane, i)) {
				missing = append(missing, i)
			}
		}
		cutIn := strings.Contains(in, turn(lane, 2))
		missingTotal += len(missing)
		if cutIn {
			cutTotal++
		}
		t.Logf("lane %s: committed turns missing from node-1's context %d %v; cut-off turn present %v; copies moved aside %d",
			lane, len(missing), missing, cutIn, len(logEvents(n1.daemonProc, "cluster.rollout_moved_aside", laneIs(apiLaneKey(t, lane)))))
	}
	t.Logf("%d lanes: %d committed turns missing, %d cut-off turns present", len(lanes), missingTotal, cutTotal)
	if missingTotal != 0 || cutTotal != 0 {
		t.Errorf("node-1's next turns lack %d committed turns and carry %d cut-off ones, want 0 and 0", missingTotal, cutTotal)
	}
}
