package gateway

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gatewayd/gatewayd/gateway/outbox"
	"github.com/gatewayd/gatewayd/gateway/replyspool"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/internal/backoff"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Notices the user sees. ReplacedNotice is sent exactly once when a stored
// thread cannot be resumed.
const (
	ReplacedNotice = "Codex thread could not be resumed; starting a new one."
	// staleWriterNotice answers a message whose thread another Codex
	// client writes to: codex allows one writer per thread and names none.
	staleWriterNotice = "This conversation's Codex thread is open in another Codex client (a terminal's `codex resume`, the Codex app or an IDE), " +
		"and Codex lets one client at a time write to a thread, so this message was not run. Quit codex there, then send it again; " +
		"or /fork to go on from the thread in a new conversation."
	storeErrorNotice = ext.StoreErrorNotice
	// storeStillPendingNotice answers a message that could neither run nor
	// be marked refused: it is still recorded and runs after a restart.
	storeStillPendingNotice = "Sorry, storage is failing right now (storage error). Your message is still recorded and may be answered later, so there is no need to send it again."
	interruptedSuffix       = ext.InterruptedSuffix
	cancelledNotice         = "Cancelled: the conversation was reset before this was answered."
)

// turnRunner runs one queued item: a turn through its lifecycle (journal,
// ensure the thread, run, commit) with the modules' hooks at each step, or
// a task. It holds no state of its own between items; a lane's
// belongs to the lane, a turn's to the turn.
type turnRunner struct {
	base        context.Context // the gateway's
	st          turnStore
	cx          turnRuntime
	host        *host
	out         *outbox.Courier
	threads     *threadCache
	inbox       inbox
	journal     journal
	log         *zap.Logger
	obs         Observer
	now         func() time.Time
	thread      codex.ThreadConfig // the base config of every lane's thread
	turnTimeout time.Duration      // codex.turn_timeout, named in a timed-out turn's notice
	notifyAfter time.Duration      // lanes.notify_after: a longer turn's answer notifies (0: never)
	gate        LaneGate           // cluster mode (SetLaneGate), else nil
	replies     *replyspool.Spool  // a waiting commit's turn, on disk

	// Parts still built by the gateway: the turn's typing and preview,
	// busy mode's interrupt of a superseded turn and deleting a stale
	// preview.
	stream      func(addr Address, replyTo string, typedAt time.Time) *streamer
	superseded  func(l *lane, cur *turnState, thread string)
	dropPreview func(ctx context.Context, addr Address, id string)
}

// turnStore is the part of the store a turn writes.
type turnStore interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	JournalTurn(ctx context.Context, e store.JournalEntry) error
	BindThread(ctx context.Context, sessionKey string, gen int64, threadID string) error
	MarkBindingLost(ctx context.Context, sessionKey string, gen int64, threadID, reason string) error
	CommitTurn(ctx context.Context, t store.CompletedTurn) (store.CommitResult, error)
}

// turnRuntime is the part of codex a turn drives.
type turnRuntime interface {
	EnsureThread(ctx context.Context, storedID string, cfg codex.ThreadConfig) (codex.Ensured, error)
	RunTurn(ctx context.Context, threadID string, in codex.TurnInput, ev codex.TurnEvents) (codex.TurnResult, error)
	RunReview(ctx context.Context, threadID string, target codex.ReviewTarget, ev codex.TurnEvents) (codex.TurnResult, error)
}

var (
	_ turnStore   = (*store.Store)(nil)
	_ turnRuntime = (*codex.Client)(nil)
)

// turn carries one turn through the lifecycle.
type turn struct {
	l       *lane
	cur     *turnState // the lane's current item, this turn's (nil outside a turn run)
	it      item
	sl      store.Lane // the lane row when the turn began
	started time.Time
	thread  string
	turnID  string
	// dir is the lane's working directory for this turn: its project's,
	// or the default. It goes with thread/start, thread/resume and
	// turn/start.
	dir string
	// refusal, set by a prepare hook, fails the turn with this notice
	// before it is journaled or its thread loaded (its working directory
	// could not be made).
	refusal string
	// stream shows typing and the preview from journaling to the answer.
	stream *streamer
	// previewID is the platform id of the streamed preview the final reply
	// replaces ("" when nothing was streamed).
	previewID string
	// work is what watches the turn (its work view) and the buttons its
	// end offers.
	work *turnWork
	// view and laneView are what the features see of the turn and its lane
	// (ext.Turn, ext.Lane): made by the first hook of the turn, in its
	// worker, instead of boxed anew at every hook call.
	view     extTurn
	laneView extLane
}

// stopStream ends typing and previews; the final answer replaces the
// preview. Safe to call more than once.
func (t *turn) stopStream() {
	if t.stream != nil {
		t.previewID = t.stream.Stop()
		t.stream = nil
	}
}

// Turn statuses as codex reports them and the store records them.
const (
	statusCompleted   = "completed"
	statusFailed      = "failed"
	statusInterrupted = "interrupted"
	// statusTimedOut is ours, not codex's: the turn watchdog interrupted a
	// turn that ran past codex.turn_timeout.
	statusTimedOut = "timed_out"
)

// process runs one queued item.
func (r *turnRunner) process(ctx context.Context, l *lane, it item) {
	if r.host.refused(ctx, l, it) {
		return
	}
	switch it.kind {
	case itemTask:
		it.task(ctx, l, it)
		r.host.after(ctx, l, it)
		return
	}
	r.runTurn(ctx, l, it)
	// A /new during the turn left its thread loaded; release it now.
	l.opMu.Lock()
	r.threads.releaseStale(ctx, l)
	l.opMu.Unlock()
	r.host.after(ctx, l, it)
}

// runTurn is the turn lifecycle: journal, ensure the thread, run, commit
// (which confirms the binding, enqueues the reply and clears the journal).
// The inbound message was recorded before it was queued.
func (r *turnRunner) runTurn(ctx context.Context, l *lane, it item) {
	t := &turn{l: l, cur: l.current(), it: it, started: r.now()}
	// The entry written with the inbound row is this run's alone: an item
	// requeued from here (a usage limit) is journaled again when it runs.
	inboundJournal := it.journal
	t.it.journal = nil
	sl, err := r.st.Lane(ctx, l.key)
	if err != nil {
		r.log.Error("turn.lane_read_failed", zap.String("lane", l.key), zap.Error(err))
		r.journal.dropUnstarted(r.base, l, it)
		r.failTurn(ctx, t, storeErrorNotice)
		return
	}
	t.sl = sl
	if t.cur.isDiscarded() {
		r.abandon(ctx, t)
		return
	}
	r.host.prepare(ctx, t, r.thread.Cwd)
	if t.refusal != "" {
		r.journal.dropUnstarted(r.base, l, it)
		r.failTurn(ctx, t, t.refusal)
		return
	}
	sl = t.sl
	t.cur.setDir(t.dir)
	if !journaledAs(inboundJournal, sl) {
		err = r.st.JournalTurn(ctx, store.JournalEntry{SessionKey: l.key, Generation: sl.Generation,
			InboundID: it.inboundID, ThreadID: sl.ThreadID, Text: it.text, StartedAt: t.started})
		if err != nil {
			r.log.Error("turn.journal_failed", zap.String("lane", l.key), zap.Error(err))
			r.failTurn(ctx, t, storeErrorNotice)
			return
		}
	}
	// Typing shows while a long thread resumes, too.
	t.stream = r.stream(l.addr, it.msgID, l.typedAt)
	defer t.stopStream()
	t.cur.setStream(t.stream)
	t.work = r.host.watch(t)
	defer func() { t.work.stop(r.now()) }()
	if !r.ensure(ctx, t, sl.ThreadID, sl.Binding) {
		return
	}
	if t.cur.isDiscarded() {
		r.abandon(ctx, t)
		return
	}
	if t.cur.isCutOff() {
		return // shutdown: stays journaled, not started
	}
	r.host.ready(ctx, t)
	if t.cur.isCutOff() {
		return // shutdown interrupted the compaction: stays journaled, not started
	}
	if t.cur.isSuperseded() {
		// busy mode interrupt: a newer message arrived before this turn began.
		r.finish(ctx, t, statusInterrupted, interruptedSuffix, codex.Usage{})
		return
	}
	r.takeEditedText(ctx, t)
	res, err := r.execute(ctx, t)
	// A turn that completed while shutdown was cutting it off is kept: the
	// thread has it, so asking the user to /retry would run it twice.
	if t.cur.isCutOff() && (err != nil || res.Status != codex.TurnCompleted) {
		r.log.Warn("turn.cut_off", zap.String("lane", l.key), zap.String("thread", t.thread))
		return // stays journaled: the next start tells the lane
	}
	if errors.Is(err, errHandled) || r.host.takenOver(ctx, t, res, err) {
		return
	}
	if res.WatchdogFired && res.Status != codex.TurnCompleted {
		// codex.turn_timeout stopped it, not the user: say so, and that
		// /retry can run it (the commit makes it the turn to retry).
		t.turnID = res.TurnID
		r.finish(ctx, t, statusTimedOut, timedOutText(res.Text, r.turnTimeout), res.Usage)
		return
	}
	if err != nil {
		r.log.Warn("turn.error", zap.String("lane", l.key), zap.String("thread", t.thread), zap.Error(err))
		r.finish(ctx, t, statusFailed, "Codex turn failed: "+briefError(err), codex.Usage{})
		return
	}
	t.turnID = res.TurnID
	r.host.finished(t, res)
	r.finish(ctx, t, string(res.Status), replyText(res), res.Usage)
}

// takeEditedText takes the text the turn runs: its message's edit when
// it was edited after leaving the queue (edits.go), journaled again so a
// restart tells or reruns what ran.
func (r *turnRunner) takeEditedText(ctx context.Context, t *turn) {
	text, edited := t.cur.takeTurnText(t.it.text)
	if !edited {
		return
	}
	t.it.text = text
	err := r.st.JournalTurn(ctx, store.JournalEntry{SessionKey: t.l.key, Generation: t.sl.Generation,
		InboundID: t.it.inboundID, ThreadID: t.sl.ThreadID, Text: text, StartedAt: t.started})
	if err != nil {
		r.log.Warn("turn.journal_edit_failed", zap.String("lane", t.l.key), zap.Error(err))
	}
}

// journaledAs says whether the journal entry written with the inbound row
// still describes the turn about to run: the lane is at its generation and
// thread (a /new or a rotation since then journals the turn again).
func journaledAs(e *store.JournalEntry, sl store.Lane) bool {
	return e != nil && e.Generation == sl.Generation && e.ThreadID == sl.ThreadID
}

// ensure loads the lane's thread (step 3). It binds a new thread as pending
// and, when the stored thread was refused, marks the old binding lost and
// tells the lane once. It reports false when the turn cannot go on (the
// failure is already handled).
func (r *turnRunner) ensure(ctx context.Context, t *turn, stored string, binding store.Binding) bool {
	l := t.l
	l.opMu.Lock()
	defer l.opMu.Unlock()
	r.threads.releaseStale(ctx, l)
	if binding == store.BindingLost {
		stored = ""
	}
	en, err := r.cx.EnsureThread(ctx, stored, r.host.threadConfig(t.sl, t.dir, r.thread))
	if err != nil {
		r.log.Warn("thread.ensure_failed", zap.String("lane", l.key), zap.String("thread", stored), zap.Error(err))
		if errors.Is(err, codex.ErrStaleWriter) {
			r.failTurn(ctx, t, staleWriterNotice)
		} else {
			r.failTurn(ctx, t, "Codex could not open this conversation: "+briefError(err))
		}
		return false
	}
	r.obs.Resume(en.Outcome.String())
	t.thread = en.ThreadID
	t.cur.setThread(en.ThreadID)
	r.threads.markLive(ctx, l, en.ThreadID)
	if err := r.bind(ctx, t, en); err != nil {
		if errors.Is(err, store.ErrStaleGeneration) {
			r.abandon(ctx, t)
			return false
		}
		r.log.Error("binding.store_failed", zap.String("lane", l.key), zap.Error(err))
		r.failTurn(ctx, t, storeErrorNotice)
		return false
	}
	return true
}

// bind records the binding for a new or replacement thread.
func (r *turnRunner) bind(ctx context.Context, t *turn, en codex.Ensured) error {
	key, gen := t.l.key, t.sl.Generation
	switch en.Outcome {
	case codex.OutcomeStarted:
		r.log.Info("binding.pending", zap.String("lane", key), zap.String("thread", en.ThreadID))
		if err := r.st.BindThread(ctx, key, gen, en.ThreadID); err != nil {
			return err
		}
		if t.sl.Binding == store.BindingLost {
			// A replacement marked the old thread lost but stopped (crash)
			// before binding a new one and telling the lane: tell it now.
			r.out.Notify(ctx, t.l.addr, "", ReplacedNotice)
		}
	case codex.OutcomeReplaced:
		if err := r.st.MarkBindingLost(ctx, key, gen, en.PreviousID, en.Reason); err != nil {
			return err
		}
		r.log.Warn("binding.lost", zap.String("lane", key), zap.String("previous", en.PreviousID),
			zap.String("thread", en.ThreadID), zap.String("reason", en.Reason))
		if err := r.st.BindThread(ctx, key, gen, en.ThreadID); err != nil {
			return err
		}
		r.out.Notify(ctx, t.l.addr, "", ReplacedNotice)
	}
	return nil
}

// execute runs the turn (step 4) with typing and a streamed preview. A
// thread the app-server forgot (it restarted) is ensured again once.
func (r *turnRunner) execute(ctx context.Context, t *turn) (codex.TurnResult, error) {
	ev := codex.TurnEvents{
		Started: func(id string) {
			t.turnID = id
			t.cur.turnInCodex()
			r.host.started(ctx, t)
			r.superseded(t.l, t.cur, t.thread)
		},
		Delta: t.stream.Delta,
	}
	ev.Progress = t.work.progress
	in := codex.TurnInput{Text: t.it.text, Cwd: t.dir, Images: t.it.images}
	r.host.input(ctx, t, &in)
	run := func() (codex.TurnResult, error) {
		if t.it.review != nil {
			return r.cx.RunReview(ctx, t.thread, *t.it.review, ev)
		}
		return r.cx.RunTurn(ctx, t.thread, in, ev)
	}
	res, err := run()
	if errors.Is(err, codex.ErrThreadNotLoaded) {
		r.log.Info("thread.not_loaded_reensure", zap.String("lane", t.l.key), zap.String("thread", t.thread))
		if !r.ensure(ctx, t, t.thread, store.BindingPending) {
			return res, errHandled
		}
		res, err = run()
	}
	return res, err
}

// longTurn reports whether the turn ran past lanes.notify_after.
func (r *turnRunner) longTurn(t *turn) bool {
	return r.notifyAfter > 0 && r.now().Sub(t.started) >= r.notifyAfter
}

// errHandled reports a failure already answered to the user.
var errHandled = errors.New("gateway: handled")

// finish commits the turn (step 5-6): transcript rows, binding confirmation
// when completed, the reply in the outbox, journal cleared, inbound done.
func (r *turnRunner) finish(ctx context.Context, t *turn, status, text string, u codex.Usage) {
	t.cur.setFinishing()
	t.stopStream()
	t.work.stop(r.now()) // collapsed before the reply goes out
	r.obs.TurnFinished(status, r.now().Sub(t.started))
	r.host.spent(t.l.addr.Platform, u)
	// The rollout holds the turn only if codex started it (gave it an id).
	rolloutThread := t.thread
	if t.turnID == "" {
		t.turnID, rolloutThread = syntheticTurnID(t), ""
	}
	reply := &store.OutboxMessage{SessionKey: t.l.key, Platform: t.l.addr.Platform,
		Kind: string(t.l.addr.Kind), ChatID: t.l.addr.ChatID, TopicID: t.l.addr.TopicID,
		UserID: t.l.addr.UserID, Text: withOrigin(t.it.origin, text), ReplyTo: t.it.msgID, EditID: t.previewID}
	sent := t.cur.markAnswered(reply)
	// Files are delivered before the reply; a preview streamed before them
	// cannot become the reply, so the reply is a new message and the
	// preview goes once the turn is committed.
	stalePreview := ""
	if len(sent) > 0 {
		stalePreview, reply.EditID = t.previewID, ""
	}
	if r.longTurn(t) {
		// An edit of the preview notifies nobody: a long turn's answer is
		// a new message that notifies its requester.
		stalePreview, reply.EditID = t.previewID, ""
		if ext.GroupPlace(t.l.addr.Kind) {
			reply.Ping = t.it.requester
		}
	}
	steered := t.cur.steer.close()
	res, kept, err := r.commit(ctx, t, store.CompletedTurn{
		SessionKey: t.l.key, Generation: t.sl.Generation, SessionID: t.sl.SessionID,
		ThreadID: t.thread, TurnID: t.turnID, InboundID: t.it.inboundID,
		UserText: t.it.text, UserMessageID: t.it.msgID, AssistantText: text, Status: status,
		Confirm: status == statusCompleted && t.thread != "",
		Reply:   reply, Usage: usageRecord(u),
		Steered: steered, Files: sent,
		Retryable: status == statusTimedOut, Retries: t.it.retries,
		RolloutThread: rolloutThread,
	})
	if err == nil { // kept comes with an error only
		t.cur.retrySettled()
	}
	switch {
	case kept:
		// Left journaled with its inbound row open: the next start, or the
		// lane's next owner, tells the lane once that it was cut off.
		r.log.Warn("turn.commit_abandoned", zap.String("lane", t.l.key), zap.String("turn", t.turnID), zap.Error(err))
	case errors.Is(err, store.ErrFenced):
		// Another node serves the lane now and answers it; saying
		// anything here would answer twice.
		r.log.Warn("turn.commit_fenced", zap.String("lane", t.l.key), zap.String("turn", t.turnID), zap.Error(err))
	case err != nil:
		r.log.Error("turn.commit_failed", zap.String("lane", t.l.key), zap.String("turn", t.turnID), zap.Error(err))
		r.out.SendDirect(ctx, t.l.addr, t.it.msgID, t.previewID, r.unsavedReply(ctx, t, text, steered))
	case res.Stale:
		// CommitTurn cleared this turn's own journal entry; clearing the
		// lane's would risk the entry of a turn of the new generation.
		r.log.Info("turn.discarded_stale", zap.String("lane", t.l.key), zap.String("turn", t.turnID))
		r.out.Notify(ctx, t.l.addr, t.it.msgID, cancelledNotice)
	default:
		if res.Duplicate {
			r.log.Warn("turn.commit_duplicate", zap.String("lane", t.l.key), zap.String("turn", t.turnID))
		}
		r.log.Info("turn.committed", zap.String("lane", t.l.key), zap.String("turn", t.turnID),
			zap.String("status", status), zap.Bool("confirmed", res.Confirmed))
		r.dropPreview(ctx, t.l.addr, stalePreview)
		r.out.Poke()
		if r.gate != nil {
			r.gate.TurnCommitted(t.l.key, t.thread)
		}
	}
}

// Pacing of a commit that waits for the database to come back.
const (
	commitRetryFirst = 100 * time.Millisecond
	commitRetryMax   = 2 * time.Second
)

// commit commits the turn. A transient failure (the database away past
// the store's own retries) does not end the turn: its reply waits here,
// and the commit is tried again with backoff until the database answers,
// so the reply goes out once through the outbox, to an API request another
// node holds too. kept reports that the wait ended first (shutdown cut the
// turn off, or the lane is no longer this node's): the turn then stays as
// the journal and the inbox have it, for the recovery to tell once.
func (r *turnRunner) commit(ctx context.Context, t *turn, ct store.CompletedTurn) (res store.CommitResult, kept bool, err error) {
	res, err = r.st.CommitTurn(ctx, ct)
	if err == nil || !store.Transient(err) {
		return res, false, err
	}
	// On disk before the wait is announced: a crash from here on loses no answer.
	if perr := r.replies.Put(ct); perr != nil {
		r.log.Error("turn.spool_failed", zap.String("lane", t.l.key), zap.String("turn", ct.TurnID), zap.Error(perr))
	}
	r.log.Warn("turn.commit_waiting", zap.String("lane", t.l.key), zap.String("turn", ct.TurnID), zap.Error(err))
	bo := backoff.New(commitRetryFirst, commitRetryMax)
	for tries := 1; ; tries++ {
		if !r.mayWait(t) || !backoff.Sleep(ctx, bo.Next()) || !r.mayWait(t) {
			return res, true, err // spooled: the next start or takeover commits it
		}
		res, err = r.st.CommitTurn(ctx, ct)
		if err == nil || !store.Transient(err) {
			if rerr := r.replies.Remove(ct); rerr != nil { // settled: a file left is dropped or a no-op later
				r.log.Warn("turn.spool_remove_failed", zap.String("turn", ct.TurnID), zap.Error(rerr))
			}
			r.log.Info("turn.commit_resumed", zap.String("lane", t.l.key), zap.String("turn", ct.TurnID),
				zap.Int("tries", tries+1), zap.Error(err))
			return res, false, err
		}
	}
}

// mayWait says whether a turn's commit may still wait for the database:
// shutdown has not cut it off and the lane is still this node's.
func (r *turnRunner) mayWait(t *turn) bool {
	return !t.cur.isCutOff() && (r.gate == nil || r.gate.Serves(t.l.key))
}

// unsavedReply closes the inbound rows of a turn whose commit failed and
// words the answer by what that achieved. Accepted means answered once,
// refused means never run: only a message whose row is now marked failed
// may be called lost ("try again"); one whose row could not be marked
// either stays received, and the next start runs it, so the user must not
// be told to send it again.
func (r *turnRunner) unsavedReply(ctx context.Context, t *turn, text string, steered []store.SteeredInput) string {
	closed := r.inbox.close(ctx, t.it.inboundID, store.InboundFailed)
	for _, s := range steered {
		closed = r.inbox.close(ctx, s.InboundID, store.InboundFailed) && closed
	}
	r.journal.clear(ctx, t.l.key)
	switch {
	case !closed:
		return storeStillPendingNotice
	case text == storeErrorNotice:
		return text
	}
	return text + "\n\n(not saved: storage error)"
}

// failTurn answers a turn that could not run and records it as failed.
func (r *turnRunner) failTurn(ctx context.Context, t *turn, msg string) {
	r.finish(ctx, t, statusFailed, msg, codex.Usage{})
}

// abandon drops a turn whose lane was reset while it started.
func (r *turnRunner) abandon(ctx context.Context, t *turn) {
	r.log.Info("turn.abandoned_reset", zap.String("lane", t.l.key))
	r.inbox.set(ctx, t.it.inboundID, store.InboundIgnored)
	r.journal.clear(ctx, t.l.key)
	r.out.Notify(ctx, t.l.addr, t.it.msgID, cancelledNotice)
	t.l.live.markStale()
}

func syntheticTurnID(t *turn) string {
	if t.it.inboundID != 0 {
		return "gw-inbound-" + strconv.FormatInt(t.it.inboundID, 10)
	}
	return "gw-" + strconv.FormatInt(t.started.UnixNano(), 36)
}

// replyText is what the user sees for a finished turn (ext.ReplyText).
func replyText(res codex.TurnResult) string { return ext.ReplyText(res) }

// timedOutText is the answer to a turn the watchdog stopped: what codex
// wrote so far, then why it stopped and what to do.
func timedOutText(partial string, limit time.Duration) string {
	why := "Codex took too long; the turn was stopped. /retry to run it again."
	if limit > 0 {
		why = "Codex took longer than " + shortDuration(limit) + "; the turn was stopped. /retry to run it again."
	}
	if partial = strings.TrimSpace(partial); partial != "" {
		return partial + "\n\n" + why
	}
	return why
}

// shortDuration prints 30m rather than 30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// briefError turns an error into a short message safe to show
// (ext.BriefError).
func briefError(err error) string { return ext.BriefError(err) }
