package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Verbose modes of the work view: /verbose and lanes.verbose.
const (
	VerboseOff     = "off"     // no status message
	VerboseSummary = "summary" // the plan and one line per action
	VerboseFull    = "full"    // also reasoning summaries and the tail of command output
)

// VerboseModes are the valid values of /verbose and lanes.verbose.
var VerboseModes = []string{VerboseOff, VerboseSummary, VerboseFull}

func validVerbose(mode string) bool {
	for _, m := range VerboseModes {
		if m == mode {
			return true
		}
	}
	return false
}

// Bounds of the status message: it must stay one short platform message.
const (
	workActionsShown = 5    // the last few actions; older ones are counted
	workOutputLines  = 3    // full mode: command output tail, lines...
	workOutputChars  = 300  // ...and characters
	workReasonChars  = 300  // full mode: the latest reasoning summary
	workTextChars    = 3000 // the whole message, under Telegram's 4096
	workFinalTimeout = 5 * time.Second
)

// WorkView is what a turn's status message shows, structured: the API lane
// sends it as the JSON of SSE "progress" events and in the answer. Counts
// cover the whole turn; Actions only the last few.
type WorkView struct {
	Plan      []WorkStep   `json:"plan,omitempty"`
	Actions   []WorkAction `json:"actions,omitempty"`
	Earlier   int          `json:"earlier_actions,omitempty"` // actions before the ones shown
	Reasoning string       `json:"reasoning,omitempty"`       // full mode: the latest summary
	Retry     string       `json:"retry,omitempty"`           // codex reconnecting to its model
	Commands  int          `json:"commands"`
	Files     int          `json:"files_changed"`
	Searches  int          `json:"web_searches"`
	Tools     int          `json:"tool_calls"`
	ElapsedMs int64        `json:"elapsed_ms"`
	// Done and Summary are set when the turn ended: the status message
	// then collapses to Summary ("3 commands, 2 files changed, 41 s").
	Done    bool   `json:"done"`
	Summary string `json:"summary,omitempty"`
}

// WorkStep is one step of Codex's plan.
type WorkStep struct {
	Step   string `json:"step"`
	Status string `json:"status"` // pending | inProgress | completed
}

// Work action kinds.
const (
	WorkCommand   = "command"
	WorkFileEdit  = "file_change"
	WorkWebSearch = "web_search"
	WorkMCPTool   = "mcp_tool"
)

// WorkAction is one thing Codex did: a command, a file change, a web
// search or an MCP tool call.
type WorkAction struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Title      string `json:"title"`  // the command, the paths, the query, server/tool
	Status     string `json:"status"` // inProgress | completed | failed | declined
	ExitCode   *int   `json:"exit_code,omitempty"`
	DurationMs int64  `json:"duration_ms,omitempty"`
	Added      int    `json:"added,omitempty"`
	Removed    int    `json:"removed,omitempty"`
	Error      string `json:"error,omitempty"`
	Output     string `json:"output,omitempty"` // full mode: the output's tail
}

// ProgressEditor is an optional capability of a platform that shows the
// work view structured (the API lane): edits of the status message come
// with the view. Platforms without it get Platform.Edit with the text.
type ProgressEditor interface {
	EditProgress(ctx context.Context, addr Address, messageID, text string, view WorkView) error
}

// workView shows one turn's work as one status message, sent silently and
// edited in place at most once per PreviewInterval. Codex's events only
// update the state under mu; every platform call happens on the view's own
// goroutine, so event delivery never waits for a platform.
type workView struct {
	p       *presenter
	addr    Address
	replyTo string
	full    bool
	started time.Time
	plat    Platform

	mu    sync.Mutex
	state workState
	dirty bool
	// closing are the buttons the closing line offers when the turn
	// ran commands or changed files (Diff, Undo), on platforms that edit
	// with buttons.
	closing []Button

	// owned by the loop goroutine
	msgID    string
	lastEdit time.Time
	lastText string

	wake chan struct{} // capacity 1
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// workState is the turn's work so far.
type workState struct {
	plan      []WorkStep
	actions   []WorkAction
	index     map[string]int  // action id → position
	files     map[string]bool // distinct paths changed
	reasoning string
	retry     string
	final     *WorkView // set by stop
}

// newWorkView starts the work view of a turn, or returns nil when the mode
// is off or the lane's platform is not running.
func (p *presenter) newWorkView(addr Address, replyTo, mode string, started time.Time) *workView {
	plat, ok := p.platforms[addr.Platform]
	if mode == VerboseOff || !ok {
		return nil
	}
	w := &workView{p: p, addr: addr, replyTo: replyTo, full: mode == VerboseFull, started: started,
		plat: plat, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	w.state.index, w.state.files = map[string]int{}, map[string]bool{}
	go w.loop()
	return w
}

// progress folds one codex event into the view; it never blocks on the
// platform. Safe on a nil view (mode off).
func (w *workView) progress(p codex.Progress) {
	if w == nil {
		return
	}
	w.mu.Lock()
	changed := w.state.apply(p, w.full)
	if changed {
		w.dirty = true
	}
	w.mu.Unlock()
	if changed {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// apply reports whether p changes what the view shows.
func (s *workState) apply(p codex.Progress, full bool) bool {
	switch p.Kind {
	case codex.ProgressPlan:
		s.plan = s.plan[:0]
		for _, st := range p.Plan {
			s.plan = append(s.plan, WorkStep{Step: st.Step, Status: st.Status})
		}
		s.retry = ""
		return true
	case codex.ProgressAction:
		if p.Action == nil {
			return false
		}
		s.putAction(p.Action, full)
		s.retry = ""
		return true
	case codex.ProgressReasoning:
		if !full {
			return false
		}
		s.reasoning = clip(p.Text, workReasonChars)
		return true
	case codex.ProgressRetry:
		s.retry = p.Text
		return true
	}
	return false
}

func (s *workState) putAction(a *codex.Action, full bool) {
	wa := workActionOf(a, full)
	for _, f := range a.Files {
		s.files[f.Path] = true
	}
	if i, ok := s.index[a.ID]; ok && a.ID != "" {
		s.actions[i] = wa
		return
	}
	s.index[a.ID] = len(s.actions)
	s.actions = append(s.actions, wa)
}

func workActionOf(a *codex.Action, full bool) WorkAction {
	wa := WorkAction{ID: a.ID, Status: a.Status, Error: a.Error}
	switch a.Type {
	case codex.ActionCommand:
		wa.Kind, wa.Title, wa.ExitCode = WorkCommand, a.Command, a.ExitCode
		wa.DurationMs = a.Duration.Milliseconds()
		if full {
			wa.Output = outputTail(a.Output)
		}
	case codex.ActionFileEdit:
		wa.Kind = WorkFileEdit
		paths := make([]string, 0, len(a.Files))
		for _, f := range a.Files {
			paths = append(paths, shortPath(f.Path))
			wa.Added += f.Added
			wa.Removed += f.Removed
		}
		wa.Title = strings.Join(paths, ", ")
	case codex.ActionWebSearch:
		wa.Kind, wa.Title = WorkWebSearch, a.Query
	case codex.ActionMCPTool:
		wa.Kind, wa.Title = WorkMCPTool, a.Server+"/"+a.Tool
	}
	if wa.Status == "" {
		wa.Status = codex.StepInProgress
		if a.Done {
			wa.Status = codex.StepCompleted
		}
	}
	return wa
}

// view is the state as a WorkView; the caller holds mu.
func (s *workState) view(elapsed time.Duration) WorkView {
	v := WorkView{Plan: append([]WorkStep(nil), s.plan...), Reasoning: s.reasoning, Retry: s.retry,
		Files: len(s.files), ElapsedMs: elapsed.Milliseconds()}
	for _, a := range s.actions {
		switch a.Kind {
		case WorkCommand:
			v.Commands++
		case WorkWebSearch:
			v.Searches++
		case WorkMCPTool:
			v.Tools++
		}
	}
	v.Earlier = max(0, len(s.actions)-workActionsShown)
	v.Actions = append(v.Actions, s.actions[v.Earlier:]...)
	return v
}

// stop ends the view when the turn's reply is about to be sent: the status
// message collapses to the summary line before the reply goes out, so the
// API lane's answer can carry it. Idempotent; safe on a nil view.
func (w *workView) stop(end time.Time) {
	if w == nil {
		return
	}
	w.once.Do(func() {
		w.mu.Lock()
		v := w.state.view(end.Sub(w.started))
		v.Done, v.Summary = true, summaryLine(v)
		v.Actions, v.Earlier, v.Reasoning, v.Retry = nil, 0, "", ""
		w.state.final = &v
		w.mu.Unlock()
		close(w.quit)
		<-w.done
	})
}

func (w *workView) loop() {
	defer close(w.done)
	tick, stopTick := w.p.newTicker(max(w.p.previewInterval/4, 10*time.Millisecond))
	defer stopTick()
	ctx, cancel := context.WithCancel(w.p.base)
	defer cancel()
	for {
		select {
		case <-w.quit:
			cancel() // an edit in flight must not hold the reply back
			w.collapse()
			return
		case <-w.wake:
			w.flush(ctx, w.p.now())
		case <-tick:
			w.flush(ctx, w.p.now())
		}
	}
}

// offerOnClose gives the closing line buttons, shown if the turn ran
// commands or changed files. Safe on a nil view.
func (w *workView) offerOnClose(buttons []Button) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.closing = buttons
	w.mu.Unlock()
}

// flush shows the latest state when the platform's edit rate allows: the
// first version at once, later ones PreviewInterval apart.
func (w *workView) flush(ctx context.Context, now time.Time) {
	if w.msgID != "" && now.Sub(w.lastEdit) < w.p.previewInterval {
		return
	}
	w.mu.Lock()
	if !w.dirty {
		w.mu.Unlock()
		return
	}
	w.dirty = false
	v := w.state.view(now.Sub(w.started))
	w.mu.Unlock()
	text := renderWork(v, w.full)
	if text == "" || text == w.lastText {
		return
	}
	w.lastEdit = now
	_ = w.show(ctx, text, v) // counted and logged; the next change tries again
}

// collapse edits the status message to the summary line. A turn that did
// nothing worth showing never had a status message and gets none; one that
// ended before its first version went out gets the summary as that first
// message.
func (w *workView) collapse() {
	w.mu.Lock()
	v := *w.state.final
	shown := renderWork(w.state.view(0), w.full) != ""
	buttons := w.closing
	w.mu.Unlock()
	if w.msgID == "" && !shown {
		return
	}
	ctx, cancel := context.WithTimeout(w.p.base, workFinalTimeout)
	defer cancel()
	if be, ok := w.plat.(ButtonEditor); ok && len(buttons) > 0 && v.Files+v.Commands > 0 && w.msgID != "" {
		err := be.EditButtons(ctx, w.addr, w.msgID, v.Summary, buttons)
		if err == nil {
			return
		}
		w.failed(ctx, "edit", err) // without its buttons the line is still the summary: edit it plain
	}
	var ra *RetryAfterError
	if err := w.show(ctx, v.Summary, v); errors.As(err, &ra) && ra.After <= workFinalTimeout {
		// The last edit came just before: the summary must not be lost to
		// the edit rate, but the reply must not wait for it either.
		go w.collapseLater(ra.After, v)
	}
}

// collapseLater retries the summary edit once the platform allows it. The
// loop has ended, so this goroutine owns the view's message fields.
func (w *workView) collapseLater(after time.Duration, v WorkView) {
	t := time.NewTimer(after)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.p.base.Done():
		return
	}
	ctx, cancel := context.WithTimeout(w.p.base, workFinalTimeout)
	defer cancel()
	_ = w.show(ctx, v.Summary, v)
}

// show sends the status message the first time and edits it afterwards.
// Failures are counted and logged here; the error is for collapse.
func (w *workView) show(ctx context.Context, text string, v WorkView) error {
	if w.msgID == "" {
		id, err := w.plat.Send(ctx, Outbound{Address: w.addr, Kind: OutProgress, Text: text, Silent: true,
			ReplyTo: w.replyTo, InReplyTo: w.replyTo, Progress: &v})
		if err != nil {
			w.failed(ctx, "progress", err)
			return err
		}
		w.msgID, w.lastText = id, text
		return nil
	}
	var err error
	if pe, ok := w.plat.(ProgressEditor); ok {
		err = pe.EditProgress(ctx, w.addr, w.msgID, text, v)
	} else {
		err = w.plat.Edit(ctx, w.addr, w.msgID, text)
	}
	if err != nil {
		w.failed(ctx, "edit", err)
		return err
	}
	w.lastText = text
	return nil
}

func (w *workView) failed(ctx context.Context, kind string, err error) {
	if ctx.Err() != nil {
		return
	}
	w.p.obs.PlatformError(w.addr.Platform, kind)
	w.p.log.Debug("workview."+kind+"_failed", zap.String("platform", w.addr.Platform), zap.Error(err))
}

// summaryLine is the one line a finished turn's status message keeps:
// "3 commands, 2 files changed, 41 s".
func summaryLine(v WorkView) string {
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(v.Commands, "command", "commands")
	add(v.Files, "file changed", "files changed")
	add(v.Searches, "web search", "web searches")
	add(v.Tools, "tool call", "tool calls")
	if len(parts) == 0 && len(v.Plan) > 0 {
		done := 0
		for _, s := range v.Plan {
			if s.Status == codex.StepCompleted {
				done++
			}
		}
		parts = append(parts, fmt.Sprintf("plan %d/%d done", done, len(v.Plan)))
	}
	parts = append(parts, workDuration(time.Duration(v.ElapsedMs)*time.Millisecond))
	return strings.Join(parts, ", ")
}

// workDuration prints "41 s" or "2 min 5 s".
func workDuration(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s < 60 {
		return fmt.Sprintf("%d s", s)
	}
	return fmt.Sprintf("%d min %d s", s/60, s%60)
}

// renderWork is the status message's text: the plan checklist first, then
// the last few actions; "" when there is nothing to show.
func renderWork(v WorkView, full bool) string {
	var b strings.Builder
	for _, s := range v.Plan {
		fmt.Fprintf(&b, "%s %s\n", stepMark(s.Status), s.Step)
	}
	if len(v.Plan) > 0 && (len(v.Actions) > 0 || v.Retry != "" || v.Reasoning != "") {
		b.WriteByte('\n')
	}
	if v.Earlier > 0 {
		fmt.Fprintf(&b, "… %d earlier\n", v.Earlier)
	}
	for _, a := range v.Actions {
		b.WriteString(actionLine(a))
		b.WriteByte('\n')
		if full && a.Output != "" {
			for _, l := range strings.Split(a.Output, "\n") {
				b.WriteString("  │ " + l + "\n")
			}
		}
	}
	if full && v.Reasoning != "" {
		b.WriteString("💭 " + v.Reasoning + "\n")
	}
	if v.Retry != "" {
		b.WriteString("⏳ " + v.Retry + "\n")
	}
	return clip(strings.TrimRight(b.String(), "\n"), workTextChars)
}

func stepMark(status string) string {
	switch status {
	case codex.StepCompleted:
		return "✅"
	case codex.StepInProgress:
		return "▶️"
	}
	return "⬜"
}

func actionLine(a WorkAction) string {
	mark := "⏳"
	switch a.Status {
	case "completed":
		mark = "✓"
	case "failed", "declined":
		mark = "✗"
	}
	switch a.Kind {
	case WorkCommand:
		line := mark + " $ " + clip(oneLine(a.Title), 120)
		switch {
		case a.Status == "declined":
			line += " (declined)"
		case a.ExitCode != nil:
			line += fmt.Sprintf(" → exit %d, %.1f s", *a.ExitCode, float64(a.DurationMs)/1000)
		}
		return line
	case WorkFileEdit:
		return fmt.Sprintf("%s ✏️ %s (+%d −%d)", mark, clip(a.Title, 120), a.Added, a.Removed)
	case WorkWebSearch:
		return mark + " 🔎 " + clip(oneLine(a.Title), 120)
	}
	line := mark + " 🔧 " + a.Title
	if a.Error != "" {
		line += ": " + clip(oneLine(a.Error), 120)
	}
	return line
}

// outputTail is the end of a command's output, bounded.
func outputTail(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > workOutputLines {
		lines = lines[len(lines)-workOutputLines:]
	}
	tail := strings.Join(lines, "\n")
	if r := []rune(tail); len(r) > workOutputChars {
		tail = "…" + string(r[len(r)-workOutputChars:])
	}
	return strings.TrimSpace(tail)
}

func shortPath(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 && i < len(p)-1 {
		return p[i+1:]
	}
	return p
}

func oneLine(s string) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	if cut {
		s += " …"
	}
	return s
}

// clip bounds s to n runes.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func verboseMeaning(mode string) string {
	switch mode {
	case VerboseOff:
		return "(no status message)"
	case VerboseFull:
		return "(plan, actions, reasoning summaries and command output)"
	}
	return "(plan and one line per action)"
}

// workViews is the work view feature: each lane's mode (/verbose, else
// lanes.verbose) and the status message of its turns in that mode.
type workViews struct {
	defaultMode string // cfg.Verbose: the mode of lanes that chose none
	st          verboseStore
	present     *presenter
	out         *deliverer // /verbose's answers
	log         *zap.Logger
}

// verboseStore is the part of the store /verbose uses.
type verboseStore interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	SetLaneOption(ctx context.Context, sessionKey string, opt store.LaneOption, value string) error
}

var _ verboseStore = (*store.Store)(nil)

func newWorkViews(defaultMode string, st verboseStore, present *presenter, out *deliverer, log *zap.Logger) *workViews {
	return &workViews{defaultMode: defaultMode, st: st, present: present, out: out, log: log}
}

// register adds /verbose.
func (v *workViews) register(h *host) {
	h.command("verbose", func(ctx context.Context, c commandCall) bool {
		v.out.Notify(ctx, c.lane.addr, c.msgID, v.command(ctx, c.lane, c.args))
		return true
	})
}

// start starts the work view of a turn of the lane sl in the lane's mode;
// nil when there is none (see presenter.newWorkView).
func (v *workViews) start(addr Address, replyTo string, sl store.Lane, started time.Time) *workView {
	return v.present.newWorkView(addr, replyTo, v.modeOf(sl), started)
}

// modeOf is the lane's work view mode: its own choice, else the default.
func (v *workViews) modeOf(sl store.Lane) string {
	if validVerbose(sl.Verbose) {
		return sl.Verbose
	}
	return v.defaultMode
}

// command shows the lane's work view mode (no argument) or sets it; an
// unknown mode is refused with the valid ones and nothing is stored.
func (v *workViews) command(ctx context.Context, l *lane, arg string) string {
	mode := strings.ToLower(strings.TrimSpace(arg))
	if mode == "" {
		sl, err := v.st.Lane(ctx, l.key)
		if err != nil {
			v.log.Warn("verbose.lane_failed", zap.String("lane", l.key), zap.Error(err))
			return "Could not read this conversation's work view setting (storage error)."
		}
		current := v.modeOf(sl)
		if !validVerbose(sl.Verbose) {
			current += " (the default)"
		}
		return "Work view: " + current + ". Set it with /verbose " + strings.Join(VerboseModes, "|") + "."
	}
	if !validVerbose(mode) {
		return fmt.Sprintf("Unknown work view mode %q: use one of %s.", arg, strings.Join(VerboseModes, ", "))
	}
	if err := v.st.SetLaneOption(ctx, l.key, store.OptionVerbose, mode); err != nil {
		v.log.Warn("verbose.store_failed", zap.String("lane", l.key), zap.Error(err))
		return "Could not save the work view setting (storage error). Please try again."
	}
	v.log.Info("lane.verbose_set", zap.String("lane", l.key), zap.String("mode", mode))
	return "Work view: " + mode + " " + verboseMeaning(mode) + ", from the next message on."
}
