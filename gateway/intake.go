package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatewayd/gatewayd/gateway/attach"

	"github.com/gatewayd/gatewayd/gateway/outbox"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
)

// intake takes a platform's message in: it admits it (the modules' admit
// hooks; the adapter checked the sender), stores the message's files,
// records it (its lane row in the same commit, and on an
// idle lane its turn's journal entry), then hands it to a command, a
// button's module or the lane's queue. A message is recorded before
// deliver returns, so an adapter acknowledges only what is durable.
type intake struct {
	base      context.Context // the gateway's: work after recording outlives the adapter's request
	st        intakeStore
	lanes     *laneTable
	sched     *scheduler
	host      *host
	out       *outbox.Courier
	inbox     inbox
	files     *files.Store // nil refuses every file with a reply
	platforms map[string]Platform
	log       *zap.Logger
	obs       Observer
	now       func() time.Time
	gate      LaneGate // cluster mode (SetLaneGate), else nil
	// steerEdit steers an edit of the running turn's message into it
	// (busyPolicy.steer); nil: edits of it are ignored.
	steerEdit func(ctx context.Context, l *lane, msgID, text string) bool

	paused func() bool                                      // usage pause in force
	busy   func(ctx context.Context, l *lane, it item) bool // busy mode: true when it handled the message
}

// intakeStore is the part of the store intake writes.
type intakeStore interface {
	RecordInbound(ctx context.Context, in store.Inbound) (id int64, duplicate bool, err error)
	editsStore
	// RecordInboundTurn is RecordInbound with the turn's journal entry in
	// the same commit, for a message that starts at once.
	RecordInboundTurn(ctx context.Context, in store.Inbound, text string) (id int64, duplicate bool, entry *store.JournalEntry, err error)
}

var _ intakeStore = (*store.Store)(nil)

// deliver records an inbound message and routes it: a button press to its
// module, a command to its handler, anything else to the lane's queue. It
// reports a duplicate (already recorded) message.
func (k *intake) deliver(ctx context.Context, in Inbound) (bool, error) {
	if k.sched.stopping.Load() {
		return false, ErrShuttingDown
	}
	if err := in.Address.Validate(); err != nil {
		return false, err
	}
	if in.Renamed { // no message: nothing to record or answer
		k.host.placeRenamed(ctx, in)
		return false, nil
	}
	if in.MessageID == "" {
		return false, errors.New("gateway: inbound has no message id")
	}
	if in.Callback != "" && in.Text == "" {
		k.pressed(ctx, in)
		return false, nil
	}
	if in.ReceivedAt.IsZero() {
		in.ReceivedAt = k.now()
	}
	if in.Edited {
		k.edit(ctx, in)
		return false, nil
	}
	if in.Ambient {
		k.host.ambient(ctx, in)
		return false, nil
	}
	if in.Text == "" && len(in.Attachments) == 0 {
		k.log.Info("inbound.empty_ignored", zap.String("platform", in.Address.Platform))
		return false, nil
	}
	// Before anything of it is stored: a refused message leaves nothing
	// to run, and the adapter still acknowledges it (senderlimit.go).
	if refused, err := k.host.admitted(ctx, in); refused {
		return false, err
	}
	if a, ok := k.host.answerOf(in); ok {
		return k.answer(ctx, in, a)
	}
	key := in.Address.SessionKey()
	// The files are part of accepting the message: stored before its row
	// is, so an adapter acknowledging the message after Deliver has them
	// on disk, and the row lists them for a restart.
	saved, notices := attach.Save(ctx, k.files, k.log, in)
	title := k.host.titleOf(key, in)
	in.Text = k.host.textOf(ctx, in) // after the title, which names the lane by what was said
	rec := store.Inbound{
		Platform: in.Address.Platform, MessageID: in.MessageID, SessionKey: key,
		SenderID: in.SenderID, SenderName: in.SenderName, Text: in.Text, ReceivedAt: in.ReceivedAt,
		Attachments: saved, Lane: laneKey(in.Address), LaneTitle: title,
		ReplyTo: in.ReplyTo, SenderAdmin: in.SenderAdmin, // for the lane's owner, maybe another node
	}
	id, dup, journal, release, err := k.record(ctx, in.Address, rec)
	defer release()
	if err != nil {
		attach.Discard(k.files, in, saved)
		return false, fmt.Errorf("gateway: record inbound: %w", err)
	}
	k.host.titleRecorded(key, title)
	if dup {
		attach.Discard(k.files, in, saved)
		k.obs.Duplicate(in.Address.Platform)
		k.log.Info("inbound.duplicate", zap.String("lane", key), zap.String("message", in.MessageID))
		return true, nil
	}
	k.obs.Inbound(in.Address.Platform)
	// Recorded: from here on the work must not depend on the adapter's
	// context (an HTTP client may hang up).
	for _, n := range notices {
		k.out.Notify(k.base, in.Address, in.MessageID, n)
	}
	if in.Text == "" && len(saved) == 0 { // every file refused: nothing to run
		k.inbox.set(k.base, id, store.InboundIgnored)
		return false, nil
	}
	if k.gate != nil { // the lane's owner, maybe another node, claims it
		k.gate.Recorded(key)
		return false, nil
	}
	k.dispatch(k.base, recorded{addr: in.Address, inboundID: id, msgID: in.MessageID, text: in.Text, att: saved, journal: journal,
		sender: in.SenderID, senderName: ext.SpeakerName(in)})
	return false, nil
}

// answer records a message a feature claimed as an answer (a question
// Codex asked), then applies it: recorded first, so a redelivery is a
// duplicate and never a turn. The row keeps what the feature says (a
// secret answer is not kept).
func (k *intake) answer(ctx context.Context, in Inbound, a ext.Answer) (bool, error) {
	rec := store.Inbound{Platform: in.Address.Platform, MessageID: in.MessageID, SessionKey: in.Address.SessionKey(),
		SenderID: in.SenderID, SenderName: in.SenderName, Text: a.Stored, ReceivedAt: in.ReceivedAt, Lane: laneKey(in.Address)}
	rowID, dup, err := k.st.RecordInbound(ctx, rec)
	if err != nil {
		return false, fmt.Errorf("gateway: record inbound: %w", err)
	}
	if dup {
		k.obs.Duplicate(in.Address.Platform)
		return true, nil
	}
	k.obs.Inbound(in.Address.Platform)
	k.applyAnswer(in, a)
	k.inbox.set(k.base, rowID, store.InboundDone)
	return false, nil
}

// answerReceipt is what a typed answer that was taken gets in reply where
// every message waits for one (EveryMessageAnswered).
const answerReceipt = "Taken as your answer to Codex's question."

// applyAnswer applies a. A taken answer is shown in its question's
// message; on a platform where the message waits for a reply of its own
// it gets a receipt too.
func (k *intake) applyAnswer(in Inbound, a ext.Answer) {
	if a.Apply(k.base) {
		return // refused, and told so in reply
	}
	if _, ok := k.platforms[in.Address.Platform].(EveryMessageAnswered); ok {
		k.out.Notify(k.base, in.Address, in.MessageID, answerReceipt)
	}
}

// record commits the inbound row, ensuring its lane row in the same
// commit, and on an idle lane its turn's journal entry too:
// one commit per message. Then the lane's intake lock is held until
// release, which the caller calls once the message is queued. In cluster
// mode the lane's owner, maybe another node, journals the turn.
func (k *intake) record(ctx context.Context, addr Address, rec store.Inbound) (
	id int64, dup bool, journal *store.JournalEntry, release func(), err error) {
	if k.gate != nil {
		id, dup, err = k.st.RecordInbound(ctx, rec)
		return id, dup, nil, func() {}, err
	}
	l := k.enterIntake(addr)
	release = func() { k.leaveIntake(l) }
	if !k.host.runsAsTurn(rec.Text, rec.Attachments) || !k.idleForTurn(l) {
		id, dup, err = k.st.RecordInbound(ctx, rec)
		return id, dup, nil, release, err
	}
	id, dup, journal, err = k.st.RecordInboundTurn(ctx, rec, attach.TurnText(rec.Text, rec.Attachments))
	return id, dup, journal, release, err
}

// enterIntake takes the lane's intake lock (see lane.intakeMu).
func (k *intake) enterIntake(addr Address) *lane {
	for {
		// A dead lane was dropped from the table meanwhile: get its successor.
		if l := k.lanes.get(addr); l.enterIntake() {
			return l
		}
	}
}

func (k *intake) leaveIntake(l *lane) {
	l.leaveIntake()
	k.lanes.forget(l) // a duplicate or refused message leaves nothing to keep
}

// idleForTurn says whether a message recorded now would start its turn at
// once: nothing running or queued on the lane, a turn slot free, no usage
// pause, no shutdown. Only then is its journal entry written with its
// inbound row; a turn that waits keeps the old order (journaled when it
// starts), so a restart runs it instead of telling it cut off.
func (k *intake) idleForTurn(l *lane) bool {
	if k.sched.stopping.Load() || !k.sched.slotFree() || k.paused() {
		return false
	}
	return l.snapshot().freeForTurn()
}

// authorized asks the platform's allowlist about a sender who is not
// sending now (a schedule's maker). A message's sender is the adapter's to
// check, once, before it delivers: it knows what the update carried (a
// member's roles, the place) and how to refuse on its platform.
func (k *intake) authorized(in Inbound) bool {
	p, ok := k.platforms[in.Address.Platform]
	if !ok {
		return true
	}
	a, ok := p.(Authorizer)
	return !ok || a.Authorize(in)
}

func laneKey(a Address) store.LaneKey {
	return store.LaneKey{SessionKey: a.SessionKey(), Platform: a.Platform, Kind: string(a.Kind),
		ChatID: a.ChatID, TopicID: a.TopicID, UserID: a.UserID}
}

// recorded is a message as the inbox holds it, ready to run.
type recorded struct {
	addr      Address
	inboundID int64
	msgID     string
	text      string
	att       []store.Attachment
	// journal is the turn's journal entry written with the inbound row
	// (intake.record), nil if none.
	journal *store.JournalEntry
	// sender and senderName are who sent it (item.requester).
	sender, senderName string
	// origin is what started a row no one typed (item.origin).
	origin string
}

// recordedRow is an inbox row read back (recovery, a cluster claim).
func recordedRow(addr Address, row store.InboundRow) recorded {
	return recorded{addr: addr, inboundID: row.ID, msgID: row.MessageID, text: row.Text, att: row.Attachments,
		sender: row.SenderID, senderName: row.SenderName, origin: row.Origin}
}

// dispatch runs a recorded message: commands act at once or queue work;
// other text queues a turn.
func (k *intake) dispatch(ctx context.Context, m recorded) {
	addr, inboundID, msgID, text, att, journal := m.addr, m.inboundID, m.msgID, m.text, m.att, m.journal
	l := k.lanes.get(addr)
	if m.origin != "" { // a trigger's text is a prompt, never a command, and waits its turn
		k.sched.enqueue(ctx, l, item{kind: itemTurn, inboundID: inboundID, msgID: msgID, text: text, journal: journal,
			requester: m.sender, requesterName: m.senderName, origin: m.origin})
		return
	}
	if len(att) == 0 {
		if name, args, ok := k.host.commands.Parse(text); ok {
			k.log.Info("command", zap.String("lane", l.key), zap.String("command", name))
			k.host.runCommand(ctx, commandCall{lane: l, name: name, args: args, inboundID: inboundID, msgID: msgID,
				sender: m.sender, senderName: m.senderName},
				func(ctx context.Context, id int64) { k.inbox.set(ctx, id, store.InboundDone) })
			return
		}
	}
	if attach.HasAudio(att) && !k.host.transcribes && l.tellAudioOnce() {
		k.out.Notify(ctx, addr, msgID, attach.AudioNotice)
	}
	it := item{kind: itemTurn, inboundID: inboundID, msgID: msgID, text: attach.TurnText(text, att), images: attach.Images(att),
		journal: journal, requester: m.sender, requesterName: m.senderName, audio: attach.Audio(att)}
	if k.busy(ctx, l, it) {
		return
	}
	k.sched.enqueue(ctx, l, it)
}
