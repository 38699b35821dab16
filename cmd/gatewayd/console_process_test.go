package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

type processLane struct {
	Key      string `json:"key"`
	ThreadID string `json:"thread_id"`
	Binding  string `json:"binding"`
	Model    string `json:"model"`
	Turns    int64  `json:"turns"`
	Queued   int    `json:"queued"`
	Running  bool   `json:"running"`
	LastTurn *struct {
		TurnTokens    int64 `json:"turn_tokens"`
		ContextWindow int64 `json:"context_window"`
	} `json:"last_turn"`
}

// waitLane polls GET /api/lanes/{name} until ok holds: the lane's live
// state has no signal outside the daemon.
func waitLane(t *testing.T, api *client.API, name, what string, ok func(processLane) bool) processLane {
	t.Helper()
	var l processLane
	var err error
	if !poll.Wait(60*time.Second, nil, func() bool {
		l = processLane{}
		err = api.Do(context.Background(), http.MethodGet, "/api/lanes/"+name, nil, &l)
		return err == nil && ok(l)
	}) {
		t.Fatalf("lane %s never %s: last %+v (%v)", name, what, l, err)
	}
	return l
}

// The built daemon with the real codex serves the console routes: a held
// turn shows as running with a message queued behind it, and afterwards
// the lane's transcript pages through both of its sessions (a /new in
// between) with the real user and assistant rows, newest first.
func TestProcessConsoleRoutesWithTheRealCodex(t *testing.T) {
	s := newDaemonSetup(t)
	model := s.model
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	model.Respond(func(req codextest.Request) codextest.Reply {
		if req.LastUserText() == "hold on" {
			entered <- struct{}{}
			<-release
		}
		return codextest.DefaultReply(req)
	})
	s.configure(t, map[string]any{"api": map[string]any{"token": "tok"}})
	api := s.api
	d := s.start(t, "console")

	resp, err := http.Get(api.Base + "/api/lanes")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/lanes without the token: %d, want 401", resp.StatusCode)
	}

	if reply := postMessage(t, api, "console", "hello console"); reply != "ECHO: hello console" {
		t.Fatalf("first reply %q", reply)
	}
	first := waitLane(t, api, "console", "idle after one turn", func(l processLane) bool { return !l.Running })
	if first.Turns != 1 || first.ThreadID == "" || first.Queued != 0 || first.LastTurn == nil || first.LastTurn.TurnTokens == 0 {
		t.Errorf("after one turn: %+v, want turns=1, a thread and the turn's usage", first)
	}
	post(t, api, "console", "/new")

	held := make(chan string, 2)
	go func() { r, err := tryPostMessage(api, "console", "hold on"); held <- fmt.Sprint(r, err) }()
	<-entered
	go func() { r, err := tryPostMessage(api, "console", "after the hold"); held <- fmt.Sprint(r, err) }()
	busy := waitLane(t, api, "console", "running with one queued", func(l processLane) bool { return l.Running && l.Queued == 1 })
	if busy.ThreadID == first.ThreadID {
		t.Errorf("after /new the lane still has thread %s", first.ThreadID)
	}
	var listed struct{ Lanes []processLane }
	if err := api.Do(context.Background(), http.MethodGet, "/api/lanes?platform=api", nil, &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed.Lanes) != 1 || listed.Lanes[0].Key != "v1:api:console" || !listed.Lanes[0].Running {
		t.Errorf("GET /api/lanes?platform=api while busy: %+v", listed.Lanes)
	}
	close(release)
	replies := []string{<-held, <-held}
	if !strings.Contains(strings.Join(replies, "|"), "ECHO: hold on") || !strings.Contains(strings.Join(replies, "|"), "ECHO: after the hold") {
		t.Fatalf("replies %q", replies)
	}
	done := waitLane(t, api, "console", "idle again", func(l processLane) bool { return !l.Running && l.Queued == 0 })
	if done.Turns != 2 {
		t.Errorf("turns in the new session = %d, want 2", done.Turns)
	}

	texts, sessions := readTranscript(t, api, "/api/lanes/v1%3Aapi%3Aconsole/transcript?limit=4")
	// The notices are the lane's too: /new's answer opens the new session,
	// and the queued message's notice, told while "hold on" ran, comes
	// after that message and before its answer.
	want := "assistant:ECHO: after the hold|user:after the hold|assistant:ECHO: hold on|" +
		"notice:Queued: I will answer after the current reply.|user:hold on|" +
		"notice:Started a new conversation: the next message goes to a fresh Codex thread.|" +
		"assistant:ECHO: hello console|user:hello console"
	if got := strings.Join(texts, "|"); got != want {
		t.Errorf("transcript\n%s\nwant\n%s", got, want)
	}
	if sessions != 2 {
		t.Errorf("transcript spans %d sessions, want 2", sessions)
	}
	var found struct {
		Results []struct{ Lane, Role, Text string }
	}
	if err := api.Do(context.Background(), http.MethodGet, "/api/search?q=hello+console", nil, &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Results) != 2 || found.Results[0].Lane != "v1:api:console" {
		t.Errorf("search: %+v, want the first turn's two rows", found.Results)
	}
	if code := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d", code)
	}
}

// readTranscript follows next_before from path to the oldest page and
// returns "role:text" newest first and how many sessions the rows span.
func readTranscript(t *testing.T, api *client.API, path string) ([]string, int) {
	t.Helper()
	var texts []string
	sessions := map[int64]bool{}
	next := path
	for range 10 {
		var page struct {
			Messages []struct {
				SessionID int64 `json:"session_id"`
				Role      string
				Text      string
			}
			NextBefore *int64 `json:"next_before"`
		}
		if err := api.Do(context.Background(), http.MethodGet, next, nil, &page); err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			texts = append(texts, m.Role+":"+m.Text)
			sessions[m.SessionID] = true
		}
		if page.NextBefore == nil {
			return texts, len(sessions)
		}
		next = fmt.Sprintf("%s&before=%d", path, *page.NextBefore)
	}
	t.Fatal("next_before never became null")
	return nil, 0
}
