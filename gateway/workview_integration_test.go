package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/features"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// workViewToolMarker makes workViewModel call exec_command first.
const workViewToolMarker = "RUN-TOOL"

// workViewModel answers a message containing workViewToolMarker with an
// exec_command call, and the follow-up (the default "TOOL OUTPUT: …WV-42")
// and everything else with a reply streamed slowly enough for the status message to be edited with the
// command's exit code before the reply ends.
func workViewModel(req codextest.Request) codextest.Reply {
	if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), workViewToolMarker) {
		return codextest.Reply{ToolCall: codextest.ExecCommand("call_wv", "echo WV-$((6*7))")}
	}
	r := codextest.DefaultReply(req)
	r.Chunks, r.ChunkDelay = 4, 500*time.Millisecond // 2 s after the command: room for its exit-code edit on a loaded machine
	return r
}

// TestWorkViewOnAPILane: with the real app-server, a turn whose model runs
// a command streams SSE "progress" events (the command, then its exit
// code, then the collapsed summary) and its answer carries the summary;
// /verbose off stops them, and still does after a restart and a /new.
func TestWorkViewOnAPILane(t *testing.T) {
	w := newWorld(t)
	w.model.Respond(workViewModel)
	cfg := gateway.Config{PreviewInterval: 50 * time.Millisecond}
	in := w.start(t, cfg)

	var views []gateway.WorkView
	done, err := in.stream("wv", "please "+workViewToolMarker, func(event, data string) {
		if event != "progress" {
			return
		}
		var v gateway.WorkView
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Errorf("progress event %s: %v", data, err)
		}
		views = append(views, v)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(views) < 2 {
		t.Fatalf("%d progress events, want the command and the summary: %+v", len(views), views)
	}
	sawExit := false
	for _, v := range views {
		for _, a := range v.Actions {
			if a.Kind == gateway.WorkCommand && a.Title == "echo WV-$((6*7))" && a.ExitCode != nil && *a.ExitCode == 0 {
				sawExit = true
			}
			if a.Output != "" {
				t.Errorf("summary mode shows command output %q", a.Output)
			}
		}
	}
	if !sawExit {
		t.Errorf("no progress event shows the command with exit code 0: %+v", views)
	}
	last := views[len(views)-1]
	if !last.Done || !strings.HasPrefix(last.Summary, "1 command, ") || last.Commands != 1 {
		t.Errorf("last progress event %+v, want the done summary of 1 command", last)
	}
	if done.Summary != last.Summary || done.Progress == nil || !strings.Contains(done.Reply, "WV-42") {
		t.Errorf("done event: summary %q progress %v reply %q; want the summary %q and the reply", done.Summary, done.Progress, done.Reply, last.Summary)
	}

	plain := in.ask(t, "wv", "again "+workViewToolMarker)
	if !strings.HasPrefix(plain.Summary, "1 command, ") {
		t.Errorf("JSON answer summary %q, want the turn's summary", plain.Summary)
	}
	if r := in.ask(t, "wv", "/verbose off"); !strings.HasPrefix(r.Reply, "Work view: off") {
		t.Fatalf("/verbose off answered %q", r.Reply)
	}
	in.stop()

	in = w.start(t, cfg)
	n := 0
	done, err = in.stream("wv", "once more "+workViewToolMarker, func(event, _ string) {
		if event == "progress" {
			n++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 || done.Summary != "" || done.Progress != nil {
		t.Errorf("after /verbose off and a restart: %d progress events, summary %q; want none", n, done.Summary)
	}
	if !strings.Contains(done.Reply, "WV-42") || done.Status != "completed" {
		t.Errorf("reply %q status %q, want the completed turn", done.Reply, done.Status)
	}

	in.ask(t, "wv", "/new") // a fresh thread keeps the lane's choice
	if r := in.ask(t, "wv", "after new "+workViewToolMarker); r.Progress != nil || !strings.Contains(r.Reply, "WV-42") {
		t.Errorf("after /new: progress %+v, reply %q; want no work view and the reply", r.Progress, r.Reply)
	}
}

// TestWorkViewFullShowsCommandOutput: in full mode the progress carries the
// tail of the command's output, which summary mode leaves out.
func TestWorkViewFullShowsCommandOutput(t *testing.T) {
	w := newWorld(t)
	w.model.Respond(workViewModel)
	w.features = features.Settings{Verbose: config.VerboseFull}
	in := w.start(t, gateway.Config{PreviewInterval: 50 * time.Millisecond})
	output := ""
	_, err := in.stream("full", "show me "+workViewToolMarker, func(event, data string) {
		if event != "progress" {
			return
		}
		var v gateway.WorkView
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Errorf("progress event %s: %v", data, err)
		}
		for _, a := range v.Actions {
			if a.Output != "" {
				output = a.Output
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if output != "WV-42" {
		t.Errorf("command output in the progress = %q, want WV-42", output)
	}
}
