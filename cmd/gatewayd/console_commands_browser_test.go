package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/doctor"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// The console's controls in a real Chromium against the built daemon with
// the real codex and the fake model, each observed where it takes effect
// (the API, the store through it, or the model's requests): New thread,
// Stop, Retry, Compact, Undo and Fork; the model select; the lanes filter (by key and
// by the title the first message gave) and transcript search; paging to
// older messages; and the status page with codex's version and a
// rate-limit window.
func TestBrowserConsoleCommandsSearchPagingAndStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon and a browser")
	}
	b := newBrowser(t)
	s := newDaemonSetup(t)
	model := s.model
	resets := time.Now().Add(4 * time.Hour).Truncate(time.Second)
	entered := make(chan struct{}, 1)
	var holds atomic.Int32
	model.Respond(func(req codextest.Request) codextest.Reply {
		if req.IsCompaction() {
			return codextest.DefaultReply(req)
		}
		if req.LastUserText() == "hold on" && holds.Add(1) == 1 {
			entered <- struct{}{}
			return codextest.Reply{HangBeforeHeaders: true} // until Stop interrupts it
		}
		r := codextest.DefaultReply(req)
		r.Headers = codextest.RateLimitHeaders(37, 300, resets)
		return r
	})
	// One sender posts a transcript page's worth to one lane: past lanes.max_per_minute.
	s.configure(t, map[string]any{"lanes": map[string]any{"max_per_minute": 0}})
	api := s.api
	d := s.start(t, "console-commands")

	// Three lanes through the API: one to command, one named by its first
	// message, and one longer than a transcript page (50 messages).
	postMessage(t, api, "cmds", "hello")
	postMessage(t, api, "alpha", "Deploy the site\nstaging first")
	postMessage(t, api, "beta", "a zebra crossing")
	for i := range 26 {
		postMessage(t, api, "long", fmt.Sprintf("message %02d", i))
	}

	// The lanes filter: by title and by key; then transcript search.
	b.run(t, "open /", chromedp.Navigate(api.Base+"/"), chromedp.WaitVisible(chromedp.CSS(`#lanes-body tr`)))
	if title := evalJS[string](t, b, `document.querySelector('tr[data-key="v1:api:alpha"] td:nth-child(3)').textContent`); title != "Deploy the site" {
		t.Errorf("alpha's title %q, want its first message's first line", title)
	}
	const shownKeys = `[...document.querySelectorAll('#lanes-body tr')].map(r => r.dataset.key).join()`
	b.run(t, "filter by title", chromedp.SendKeys(chromedp.CSS(`#lane-filter`), "deploy"))
	b.waitJS(t, "only alpha", shownKeys+` === 'v1:api:alpha'`)
	b.run(t, "filter by key", chromedp.Evaluate[chromedp.Void](`document.getElementById('lane-filter').value = ''`), chromedp.SendKeys(chromedp.CSS(`#lane-filter`), "bet"))
	b.waitJS(t, "only beta", shownKeys+` === 'v1:api:beta' && document.getElementById('lane-filter').value === 'bet'`)
	b.run(t, "search", chromedp.SendKeys(chromedp.CSS(`#search-query`), "zebra"), chromedp.Click(chromedp.CSS(`form.search button`)))
	b.waitJS(t, "the search results", `document.querySelectorAll('#search-results li a').length > 0`)
	if got := evalJS[string](t, b, `[...document.querySelectorAll('#search-results li')].map(li => li.textContent).join('|')`); !strings.Contains(got, "v1:api:beta") || !strings.Contains(got, "a zebra crossing") || strings.Contains(got, "alpha") {
		t.Errorf("search results %q, want beta's message only", got)
	}

	// Paging: 50 of 52 messages, then the two oldest with "older".
	b.run(t, "the long lane", chromedp.Navigate(api.Base+"/#/lane/long"))
	b.waitJS(t, "the first page", `document.querySelectorAll('#transcript .msg').length === 50 && !document.getElementById('older').hidden`)
	b.run(t, "older", chromedp.Click(chromedp.CSS(`#older`)))
	b.waitJS(t, "every message", `document.querySelectorAll('#transcript .msg').length === 52 && document.getElementById('older').hidden`)
	if first := evalJS[string](t, b, `document.querySelector('#transcript .msg .text').textContent`); first != "message 00" {
		t.Errorf("the oldest message shown first is %q, want message 00", first)
	}

	b.run(t, "the command lane", chromedp.Navigate(api.Base+"/#/lane/cmds"), chromedp.WaitVisible(chromedp.CSS(`#composer-text`)))
	b.waitJS(t, "the lane head", `(document.getElementById('lane-thread')?.textContent || '—') !== '—'`)
	first := laneOf(t, api, "cmds")
	if title := evalJS[string](t, b, `document.getElementById('lane-title').textContent`); title != "hello" {
		t.Errorf("the lane page's title %q, want its first message", title)
	}

	// New thread: the next reply runs on a thread other than the first.
	b.command(t, "#cmd-new")
	b.send(t, "after new")
	afterNew := laneOf(t, api, "cmds")
	if afterNew.ThreadID == "" || afterNew.ThreadID == first.ThreadID {
		t.Errorf("thread after New thread = %q, before %q; want a new one", afterNew.ThreadID, first.ThreadID)
	}

	// Stop: the hung turn ends interrupted and the lane is idle again.
	b.run(t, "ask and hang", chromedp.SendKeys(chromedp.CSS(`#composer-text`), "hold on"), pressEnter(0))
	select {
	case <-entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the held request never reached the model")
	}
	b.command(t, "#cmd-stop")
	if note := evalJS[string](t, b, `document.getElementById('lane-notes').textContent`); !strings.Contains(note, "Stopping") {
		t.Errorf("Stop answered %q", note)
	}
	b.waitJS(t, "the held reply ends", lastDone+` !== ''`)
	if status := evalJS[string](t, b, lastDone); status != "interrupted" {
		t.Errorf("the stopped reply ended %q, want interrupted", status)
	}
	if l := waitLane(t, api, "cmds", "idle after Stop", func(l processLane) bool { return !l.Running }); l.Queued != 0 {
		t.Errorf("after Stop: %+v", l)
	}

	// Retry: nothing was cut off or timed out (the stopped turn was the
	// user's), so the answered message does not go to the model again
	// (/retry no longer reruns the last message).
	b.send(t, "retry me")
	b.command(t, "#cmd-retry")
	if n := countUserText(model, "retry me"); n != 1 {
		t.Errorf("the model got %q %d times after Retry, want once", "retry me", n)
	}
	if note := evalJS[string](t, b, `document.getElementById('lane-notes').textContent`); note != "Nothing to retry in this conversation." {
		t.Errorf("Retry answered %q, want Nothing to retry", note)
	}

	// Compact: codex asks the model for a compaction summary.
	before := countCompactions(model)
	b.command(t, "#cmd-compact")
	if n := countCompactions(model); n != before+1 {
		t.Errorf("compaction requests %d after Compact, want %d (notes %q)", n, before+1,
			evalJS[string](t, b, `document.getElementById('lane-notes').textContent`))
	}

	// Undo and Fork: the last turn leaves Codex's history (the
	// lane has no worktree, so files are said not to be restored), and the
	// fork's answer links to the lane it made.
	b.command(t, "#cmd-undo")
	if note := evalJS[string](t, b, `document.getElementById('lane-notes').textContent`); !strings.Contains(note, "Undid the last turn") || !strings.Contains(note, "files were not restored") {
		t.Errorf("Undo answered %q", note)
	}
	b.command(t, "#cmd-fork")
	if href := evalJS[string](t, b, `document.querySelector('#lane-notes a')?.getAttribute('href') || ''`); !strings.HasPrefix(href, "#/lane/v1%3Aapi%3Acmds-fork-") {
		t.Errorf("Fork's answer links to %q (notes %q)", href, evalJS[string](t, b, `document.getElementById('lane-notes').textContent`))
	}

	// The model select offers codex's models; choosing one sets the lane's.
	b.waitJS(t, "the model choices", `document.querySelectorAll('#cmd-model option').length > 2`)
	chosen := evalJS[string](t, b, `document.querySelectorAll('#cmd-model option')[2].value`)
	b.run(t, "choose a model", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const s = document.getElementById('cmd-model');
		s.value = %q;
		s.dispatchEvent(new Event('change'));
	})()`, chosen)))
	waitLane(t, api, "cmds", "the chosen model stored", func(l processLane) bool { return l.Model == chosen })
	b.waitJS(t, "the efforts of the chosen model", `document.querySelectorAll('#cmd-effort option').length > 2`)

	// The status page: codex's version and the window the replies reported.
	b.run(t, "status", chromedp.Navigate(api.Base+"/#/status"))
	b.waitJS(t, "the status", `document.getElementById('status-codex-version')?.textContent.includes('`+doctor.PinnedCodexVersion+`') && document.querySelector('#limits-body tr[data-window="primary"]') !== null`)
	if row := evalJS[string](t, b, `document.querySelector('#limits-body tr[data-window="primary"]').textContent`); !strings.Contains(row, "37%") || !strings.Contains(row, "5 h") || strings.Contains(row, "0 min") {
		t.Errorf("the primary window row %q, want 37%% of 5 h", row)
	}
	for id, want := range map[string]string{
		// Five lanes: the four above and the fork.
		"health": "Healthy", "status-lanes": "of 5 known", "status-turns": "0 running", "status-store": "database",
	} {
		if got := evalJS[string](t, b, `document.getElementById('`+id+`').textContent`); !strings.Contains(got, want) {
			t.Errorf("#%s = %q, want it to contain %q", id, got, want)
		}
	}
	if got := evalJS[string](t, b, `document.getElementById('metrics-body').textContent`); !strings.Contains(got, "Turns finished") || !strings.Contains(got, "Memory (resident)") {
		t.Errorf("metrics table %q, want named rows", got)
	}
	b.screenshot(t, "console-status.png")
	b.noExceptions(t)
	if code := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d", code)
	}
}

// command clicks a command button on the lane page and waits for its
// answer in the notes (cleared first, so an old answer does not count).
func (b *browser) command(t *testing.T, button string) {
	t.Helper()
	b.run(t, "clear the notes", chromedp.Evaluate[chromedp.Void](`document.getElementById('lane-notes').textContent = ''`),
		chromedp.Click(chromedp.CSS(button)))
	b.waitJS(t, button+" answered", `document.getElementById('lane-notes').textContent !== ''`)
}

func laneOf(t *testing.T, api *client.API, name string) processLane {
	t.Helper()
	var l processLane
	if err := api.Do(context.Background(), http.MethodGet, "/api/lanes/"+name, nil, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func countUserText(model *codextest.Model, text string) int {
	n := 0
	for _, r := range model.Requests() {
		if !r.IsCompaction() && r.LastUserText() == text {
			n++
		}
	}
	return n
}

func countCompactions(model *codextest.Model) int {
	n := 0
	for _, r := range model.Requests() {
		if r.IsCompaction() {
			n++
		}
	}
	return n
}
