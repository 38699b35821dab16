package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

const chromiumPath = "/usr/bin/chromium"

// browser is a headless Chromium driven through chromedp; exceptions the
// page throws are collected, since a broken script fails silently.
type browser struct {
	ctx        context.Context
	mu         sync.Mutex
	exceptions []string
	requests   []string // "METHOD URL" of every request the page made, in order
	dialogs    []string // the messages of the page's confirm() and alert() dialogs, each accepted
}

// newBrowser starts Chromium with a fresh profile. Outside CI a machine
// without it skips; in CI (where .ci/run installs it) it must run.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("%s is missing (apt-get install chromium); browser tests run in CI", chromiumPath)
		}
		t.Fatalf("CI is set but %s is missing: %v", chromiumPath, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 1000),
	}
	b := &browser{}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithListener(b.listen))
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// The first Run starts the browser and must not have a timeout: it
	// would stop the browser with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	b.ctx = ctx
	return b
}

func (b *browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		b.exceptions = append(b.exceptions, exceptionText(e.ExceptionDetails))
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.Method+" "+e.Request.URL)
	case *page.EventJavascriptDialogOpening:
		// A dialog blocks the page's script (and every evaluation) until it
		// is answered: accept it, as a user who read it would, and keep its
		// words for the test. Not from this goroutine: it delivers the
		// answer's own events.
		b.dialogs = append(b.dialogs, e.Message)
		go func() {
			_, _ = chromedp.Call(b.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}()
	}
}

// dialogsSeen returns the dialogs' messages so far.
func (b *browser) dialogsSeen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.dialogs)
}

// requestsSince returns the requests after the first n (a count taken
// earlier from len(requestsSince(0))).
func (b *browser) requestsSince(n int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests[min(n, len(b.requests)):])
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return d.Text
}

func (b *browser) run(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitJS polls a JavaScript expression until it is truthy: the page's
// own state is the signal, so there is no sleep to tune.
func (b *browser) waitJS(t *testing.T, what, expr string) {
	t.Helper()
	poll := chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))
	if _, err := chromedp.Run(b.ctx, poll); err != nil {
		page, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, page)
	}
}

func evalJS[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b *browser) noExceptions(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.exceptions) > 0 {
		t.Errorf("the page threw: %q", b.exceptions)
	}
}

// screenshot saves the page as PNG in the test's artifact directory (kept
// under -outputdir with go test -artifacts).
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	// Quality 100 makes a PNG; anything less is a JPEG.
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s: %s", name, path)
}

// lastReply is the text of the newest streamed reply on the lane page.
const lastReply = `(() => { const r = [...document.querySelectorAll('.live-reply')].at(-1); return r ? r.querySelector('.text').textContent : ''; })()`

// lastDone is the status of the newest reply once its "done" event came.
const lastDone = `(() => { const r = [...document.querySelectorAll('.live-reply')].at(-1); return r && r.dataset.status ? r.dataset.status : ''; })()`

// pressEnter presses Enter as a keyboard does: a keyDown that carries the
// text, so the page's preventDefault can stop the new line (KeyEvent sends
// a separate char event that would insert it regardless).
func pressEnter(modifiers int64) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Modifiers: modifiers,
			Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13, Text: "\r", UnmodifiedText: "\r"}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := down
		up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, up)
		return err
	})
}

const shift = 8

// send types a message into the composer and presses Enter.
func (b *browser) send(t *testing.T, text string) {
	t.Helper()
	before := evalJS[int](t, b, `document.querySelectorAll('.live-reply').length`)
	b.run(t, "type "+text, chromedp.SendKeys(chromedp.CSS(`#composer-text`), text), pressEnter(0))
	b.waitJS(t, "reply to "+text+" done", fmt.Sprintf(`document.querySelectorAll('.live-reply').length === %d && %s !== ''`, before+1, lastDone))
}

// The console in a real Chromium against the built daemon with the real
// codex app-server and the fake model: it asks for the token and refuses a
// wrong one, streams a reply into an API lane, shows a reply that looks
// like HTML as text, runs an approved command, sends an uploaded image to
// the model, and resets a lane so that the next reply starts a new thread.
func TestBrowserConsoleWithTheRealCodex(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon and a browser")
	}
	b := newBrowser(t)
	model := codextest.NewModel(t)
	const xss = `<img src=x onerror="document.title='pwned'"> **bold** and ` + "`code`"
	model.Respond(func(req codextest.Request) codextest.Reply {
		switch {
		case req.IsCompaction():
		case strings.HasPrefix(req.LastUserText(), "stream please"):
			return codextest.Reply{Text: "one two three four five six seven eight", Chunks: 8, ChunkDelay: 150 * time.Millisecond}
		case req.LastUserText() == "render this":
			return codextest.Reply{Text: xss}
		case req.LastUserText() == "send the report":
			if _, ok := req.ToolOutput(); !ok {
				return codextest.Reply{ToolCall: codextest.SendFile("call-2", "report.txt", "the report")}
			}
		case strings.HasPrefix(req.LastUserText(), "pick a database"):
			if _, ok := req.ToolOutput(); !ok {
				return codextest.Reply{ToolCall: codextest.AskUser("call-3", codextest.AskedQuestion{ID: "db", Header: "Database",
					Question: "Which one?", Options: []string{"SQLite", "PostgreSQL"}})}
			}
		case req.LastUserText() == "make the file":
			if _, ok := req.ToolOutput(); !ok {
				return codextest.Reply{ToolCall: codextest.ExecCommand("call-1", "touch approved.txt")}
			}
		}
		return codextest.DefaultReply(req)
	})
	bin := buildDaemon(t)
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	addr := freeAddr(t)
	cfgFile := processConfig(t, dir, addr, model, map[string]any{
		"api": map[string]any{"listen": addr, "token": "right-token"},
	})
	setApprovals(t, cfgFile)
	api := &client.API{Base: "http://" + addr, Token: "right-token"}
	d := startDaemon(t, bin, cfgFile, dir, "console", listenNotify(t).path)
	waitHealthy(t, api, d)

	// The token: asked for, a wrong one refused with a message, the right one kept.
	b.run(t, "open /", chromedp.Navigate(api.Base+"/"), chromedp.WaitVisible(chromedp.CSS(`#login-form`)))
	b.run(t, "wrong token", chromedp.SendKeys(chromedp.CSS(`#login-token`), "wrong-token"), chromedp.Click(chromedp.CSS(`#login-submit`)))
	b.waitJS(t, "the wrong token is refused", `!document.getElementById('login').hidden && document.getElementById('login-message').textContent.includes('refused')`)
	b.run(t, "right token", chromedp.SendKeys(chromedp.CSS(`#login-token`), "right-token"), chromedp.Click(chromedp.CSS(`#login-submit`)))
	b.run(t, "the token form goes away", chromedp.WaitNotVisible(chromedp.CSS(`#login-form`)))
	b.waitJS(t, "the lanes view after the right token", `document.getElementById('lanes-body') !== null`)
	stored := evalJS[string](t, b, `sessionStorage.getItem('gatewayd.token')`)
	if stored != "right-token" {
		t.Errorf("sessionStorage token = %q, want the right one kept", stored)
	}

	// A streamed reply: the text grows before the turn is done.
	b.run(t, "open the lane", chromedp.Navigate(api.Base+"/#/lane/v1:api:web"), chromedp.WaitVisible(chromedp.CSS(`#composer-text`)))
	b.run(t, "type two lines", chromedp.SendKeys(chromedp.CSS(`#composer-text`), "stream please"), pressEnter(shift),
		chromedp.SendKeys(chromedp.CSS(`#composer-text`), "now"), pressEnter(0))
	b.waitJS(t, "part of the reply before the end", fmt.Sprintf(`%s.startsWith('one') && %s === ''`, lastReply, lastDone))
	b.waitJS(t, "the whole reply", fmt.Sprintf(`%s === 'one two three four five six seven eight' && %s === 'completed'`, lastReply, lastDone))

	if got := lastUserText(model, "stream please"); got != "stream please\nnow" {
		t.Errorf("the model got %q; want Shift+Enter's new line and Enter sending", got)
	}

	// Model text is text: the <img> shows as characters and makes no element.
	b.send(t, "render this")
	shown := evalJS[string](t, b, lastReply)
	imgs := evalJS[int](t, b, `document.querySelectorAll('img').length`)
	if imgs != 0 || !strings.Contains(shown, `<img src=x onerror="document.title='pwned'">`) {
		t.Errorf("the reply rendered as %q with %d img elements; want the characters and none", shown, imgs)
	}
	strong := evalJS[string](t, b, `[...document.querySelectorAll('.live-reply strong')].map(e => e.textContent).join()`)
	title := evalJS[string](t, b, `document.title`)
	if strong != "bold" || title == "pwned" {
		t.Errorf("bold = %q, title = %q; want the Markdown bold and no script run", strong, title)
	}

	// An approval as buttons; Allow runs the command.
	b.run(t, "ask", chromedp.SendKeys(chromedp.CSS(`#composer-text`), "make the file"), pressEnter(0))
	b.waitJS(t, "the approval buttons", `document.querySelector('.approval .decide-accept') !== null`)
	asked := evalJS[string](t, b, `document.querySelector('.approval').textContent`)
	if !strings.Contains(asked, "touch approved.txt") {
		t.Errorf("approval shows %q, want the command", asked)
	}
	b.run(t, "allow", chromedp.Click(chromedp.CSS(`.approval .decide-accept`)))
	b.waitJS(t, "the approved turn done", fmt.Sprintf(`%s === 'completed'`, lastDone))
	if outcome := evalJS[string](t, b, `document.querySelector('.approval .outcome').textContent`); outcome != "Allowed once" {
		t.Errorf("approval outcome %q, want Allowed once", outcome)
	}
	if _, err := os.Stat(filepath.Join(work, "approved.txt")); err != nil {
		t.Errorf("Allow did not run the command: %v", err)
	}

	// In Plan mode Codex's question shows with a button per option; the
	// chosen one reaches the model.
	b.run(t, "plan", chromedp.SendKeys(chromedp.CSS(`#composer-text`), "/plan pick a database"), pressEnter(0))
	b.waitJS(t, "the question's buttons", `document.querySelectorAll('.question .answer-option').length === 2`)
	if asked := evalJS[string](t, b, `document.querySelector('.question').textContent`); !strings.Contains(asked, "Database: Which one?") {
		t.Errorf("question shows %q", asked)
	}
	b.run(t, "choose", chromedp.Click(chromedp.CSS(`.question .answer-option:last-of-type`)))
	b.waitJS(t, "the answered turn done", fmt.Sprintf(`%s === 'completed'`, lastDone))
	if got := evalJS[string](t, b, lastReply); !strings.Contains(got, `"answers":["PostgreSQL"]`) {
		t.Errorf("the reply after the answer is %q, want the chosen label", got)
	}
	if outcome := evalJS[string](t, b, `document.querySelector('.question .outcome').textContent`); outcome != "Answered: PostgreSQL" {
		t.Errorf("question outcome %q", outcome)
	}
	b.send(t, "/plan off")

	// An uploaded image reaches the model as an input_image.
	img := filepath.Join(dir, "dot.png")
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	if err := os.WriteFile(img, png, 0o644); err != nil {
		t.Fatal(err)
	}
	b.run(t, "pick the image", chromedp.SetUploadFiles(chromedp.CSS(`#composer-file`), []string{img}))
	b.waitJS(t, "the image listed", `document.getElementById('attached').textContent.includes('dot.png')`)
	b.send(t, "what is this")
	if parts := lastUserParts(model); !slices.Contains(parts, "input_image") {
		t.Errorf("the model's last user message parts = %v, want an input_image", parts)
	}

	// A file Codex sends is a link; clicking it downloads with the token.
	report := []byte("quarterly: 1, 2, 3\n")
	if err := os.WriteFile(filepath.Join(work, "report.txt"), report, 0o644); err != nil {
		t.Fatal(err)
	}
	downloads := t.TempDir()
	if _, err := chromedp.CallBrowser(b.ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads,
		BrowserContextID: chromedp.FromContext(b.ctx).BrowserContextID}); err != nil {
		t.Fatal(err)
	}
	b.send(t, "send the report")
	b.run(t, "download", chromedp.Click(chromedp.CSS(`.live-reply:last-of-type .file-link`)))
	b.waitJS(t, "the file fetched", `document.querySelector('.live-reply:last-of-type .file-link').dataset.state === 'saved'`)
	if got := waitFile(t, filepath.Join(downloads, "report.txt")); string(got) != string(report) {
		t.Errorf("downloaded %q, want %q", got, report)
	}

	// Reset from the console: the next reply starts a fresh thread, and
	// the lanes view shows the new thread id.
	b.waitJS(t, "the lane head shows a thread", `(document.getElementById('lane-thread')?.textContent || '—') !== '—'`)
	before := evalJS[string](t, b, `document.getElementById('lane-thread').textContent`)
	b.screenshot(t, "console-lane.png")
	b.run(t, "reset", chromedp.Click(chromedp.CSS(`#cmd-reset`)))
	b.waitJS(t, "the reset confirmed", `document.getElementById('lane-notes').textContent.includes('Lane reset')`)
	b.send(t, "after the reset")
	b.run(t, "lanes view", chromedp.Navigate(api.Base+"/#/"))
	b.waitJS(t, "the lanes view shows a new thread", fmt.Sprintf(
		`(() => { const r = document.querySelector('tr[data-key="v1:api:web"] .thread'); return r && r.textContent !== '' && r.textContent !== %q; })()`, before))

	// The transcript, from the store, renders model text as text too.
	b.run(t, "the lane again", chromedp.Navigate(api.Base+"/#/lane/v1%3Aapi%3Aweb"))
	b.waitJS(t, "the transcript", `[...document.querySelectorAll('#transcript .msg.assistant')].some(m => m.textContent.includes('ECHO: after the reset'))`)
	if n := evalJS[int](t, b, `document.querySelectorAll('img').length`); n != 0 {
		t.Errorf("the transcript has %d img elements, want none", n)
	}
	if !evalJS[bool](t, b, `document.getElementById('transcript').textContent.includes('<img src=x onerror=')`) {
		t.Error("the transcript does not show the HTML-looking reply as text")
	}

	// The status page: health and the metrics, readable.
	b.run(t, "status", chromedp.Navigate(api.Base+"/#/status"))
	b.waitJS(t, "healthy with metrics", `document.getElementById('health').textContent === 'Healthy' && document.querySelectorAll('#metrics-body tr').length > 0`)
	if rows := evalJS[string](t, b, `document.getElementById('metrics-body').textContent`); !strings.Contains(rows, "Turns running") {
		t.Errorf("status metrics %q, want turns running among them", rows)
	}
	b.noExceptions(t)
}

// rightmostEdge is how far right the page's elements reach, not counting
// those inside the containers that scroll sideways on purpose (tables,
// code blocks).
const rightmostEdge = `(() => {
	let max = document.documentElement.scrollWidth;
	for (const e of document.querySelectorAll('body *')) {
		if (e.parentElement.closest('.table-wrap, pre')) continue;
		max = Math.max(max, e.getBoundingClientRect().right);
	}
	return Math.ceil(max);
})()`

// waitFile polls for a download to finish: Chromium writes it under a
// temporary name and renames it when done, and tells no one outside.
func waitFile(t *testing.T, path string) []byte {
	t.Helper()
	var b []byte
	if !poll.Wait(30*time.Second, nil, func() bool {
		var err error
		b, err = os.ReadFile(path)
		return err == nil
	}) {
		entries, _ := os.ReadDir(filepath.Dir(path))
		t.Fatalf("%s never appeared; the directory has %v", path, entries)
	}
	return b
}

// lastUserText is the last user message the model was sent that starts
// with prefix.
func lastUserText(model *codextest.Model, prefix string) string {
	reqs := model.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if text := reqs[i].LastUserText(); strings.HasPrefix(text, prefix) {
			return text
		}
	}
	return ""
}

// lastUserParts are the content part types of the last user message the
// model was sent.
func lastUserParts(model *codextest.Model) []string {
	reqs := model.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if !reqs[i].IsCompaction() && strings.Contains(reqs[i].LastUserText(), "what is this") {
			return reqs[i].LastUserParts()
		}
	}
	return nil
}

// setApprovals turns chat approvals on in the written config (codex runs
// unknown commands only once the lane allows them).
func setApprovals(t *testing.T, cfgFile string) {
	t.Helper()
	raw, err := os.ReadFile(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(raw), `"codex": {`, `"codex": {
    "approvals": "chat",`, 1)
	if s == string(raw) {
		t.Fatal("config has no codex section")
	}
	if err := os.WriteFile(cfgFile, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Without api.Token on loopback the page needs no token, and at phone
// width nothing is wider than the screen. Streaming a reply moves nothing
// on the page (Chromium's layout-shift entries, outside recent input).
func TestBrowserConsoleAtPhoneWidthWithoutAToken(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon and a browser")
	}
	b := newBrowser(t)
	s := newDaemonSetup(t)
	model := s.model
	long := strings.Repeat("a rather long reply that wraps over several lines on a phone ", 6)
	model.Respond(func(req codextest.Request) codextest.Reply {
		if req.LastUserText() == "slowly" {
			return codextest.Reply{Text: long, Chunks: 12, ChunkDelay: 100 * time.Millisecond}
		}
		return codextest.DefaultReply(req)
	})
	s.configure(t, nil)
	api := s.api
	s.start(t, "console-phone")

	b.run(t, "phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.run(t, "open /", chromedp.Navigate(api.Base+"/"), chromedp.WaitVisible(chromedp.CSS(`#lanes-body`)))
	if evalJS[bool](t, b, `!document.getElementById('login').hidden`) {
		t.Fatal("the page asks for a token the daemon does not have")
	}
	b.run(t, "open a lane", chromedp.Navigate(api.Base+"/#/lane/v1:api:phone"), chromedp.WaitVisible(chromedp.CSS(`#composer-text`)))
	b.send(t, "hello")
	// The head turns from "a new lane" to the lane's fields after the first
	// reply; that is not streaming's doing, so it is waited for.
	b.waitJS(t, "the lane head after the first reply", `document.getElementById('lane-thread') !== null`)
	// Shifts are counted from the first streamed word on: the ones right
	// after pressing Enter are the page answering the input.
	b.run(t, "watch layout shifts", chromedp.Evaluate[chromedp.Void](`window.shifts = []; new PerformanceObserver((list) => {
		for (const e of list.getEntries()) if (window.streaming) window.shifts.push(e.value + " " + (e.sources || []).map((s) => s.node ? (s.node.className || s.node.nodeName) : "?").join());
	}).observe({ type: 'layout-shift' }); undefined`))
	b.run(t, "type", chromedp.SendKeys(chromedp.CSS(`#composer-text`), "slowly"), pressEnter(0))
	b.waitJS(t, "the first words", fmt.Sprintf(`(window.streaming = %s !== '') && %s === ''`, lastReply, lastDone))
	b.waitJS(t, "the whole reply", fmt.Sprintf(`%s === 'completed'`, lastDone))
	if got := evalJS[string](t, b, lastReply); got != strings.TrimSpace(long) {
		t.Errorf("reply %q, want %q", got, long)
	}
	shifts := evalJS[[]string](t, b, `window.shifts`)
	t.Logf("layout shifts while streaming: %v", shifts)
	if len(shifts) > 0 {
		t.Errorf("streaming moved the page: layout shifts %v", shifts)
	}
	// A file dropped on the composer goes with the next message.
	b.run(t, "drop a file", chromedp.Evaluate[chromedp.Void](`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(['dropped words'], 'dropped.txt', { type: 'text/plain' }));
		document.getElementById('composer').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
	})()`))
	b.waitJS(t, "the dropped file listed", `document.getElementById('attached').textContent.includes('dropped.txt')`)
	b.send(t, "with a dropped file")
	if got := lastUserText(model, "with a dropped file"); !strings.Contains(got, "dropped.txt") {
		t.Errorf("the model got %q, want the dropped file's path in it", got)
	}

	// A command as a control: the effort select sets the lane's effort.
	b.run(t, "choose effort high", chromedp.Evaluate[chromedp.Void](`(() => {
		const s = document.getElementById('cmd-effort');
		s.value = 'high';
		s.dispatchEvent(new Event('change'));
	})()`))
	b.waitJS(t, "the lane's effort high", `(document.getElementById('lane-head').textContent || '').includes('default / high')`)

	// In this order: each is a new hash, so each view is built afresh.
	for _, p := range []struct{ page, loaded string }{
		{"/#/", `document.querySelectorAll('#lanes-body tr').length > 0`},
		{"/#/status", `document.querySelectorAll('#metrics-body tr').length > 0`},
		{"/#/lane/v1:api:phone", `document.getElementById('lane-thread') !== null && document.querySelectorAll('#transcript .msg').length > 0`},
	} {
		page := p.page
		b.run(t, "open "+page, chromedp.Navigate(api.Base+page))
		b.waitJS(t, page+" loaded", p.loaded)
		if w := evalJS[int](t, b, rightmostEdge); w > 390 {
			t.Errorf("%s reaches %d px at a 390 px screen", page, w)
		}
	}
	b.screenshot(t, "console-phone.png")
	b.noExceptions(t)
}
