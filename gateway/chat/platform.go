package chat

// This file holds what an adapter and the gateway say to each other:
// outbound messages, the Platform interface every adapter implements whole,
// and the few optional capabilities an adapter may lack, checked by type
// assertion.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Sink receives inbound messages from an adapter. Deliver returns only after
// the message is durably recorded, or recognised as one recorded before
// (duplicate: it is answered once, by its first delivery), so an adapter
// may acknowledge it to its platform when Deliver returns no error.
// Deliver must be called in platform order for any one lane.
type Sink interface {
	Deliver(ctx context.Context, in Inbound) (duplicate bool, err error)
}

// OutKind says why a message is sent.
type OutKind string

const (
	OutReply  OutKind = "reply"  // an agent reply
	OutNotice OutKind = "notice" // a gateway notice (queued, cut off, thread replaced)
	// OutPreview is the first message of a streamed reply; later versions of
	// the growing text arrive through Platform.Edit on the returned id.
	OutPreview OutKind = "preview"
	// OutFile is a file the agent sent (Outbound.File; Text its caption),
	// delivered through Platform.SendFile.
	OutFile OutKind = "file"
	// OutProgress is a turn's status message (the work view, feature/workview):
	// sent silently, then edited in place through Platform.Edit (or
	// ProgressEditor) and collapsed to one summary line when the reply
	// comes.
	OutProgress OutKind = "progress"
)

// SentFile is the file of an OutFile message: a snapshot under the lane's
// out directory (<state_dir>/files/<lane>/out), taken when the agent asked,
// so later edits do not change what is sent.
type SentFile struct {
	Path string // the snapshot; read it with Open
	// ID is the snapshot's name within the lane's out directory: the API
	// lane serves it as GET /api/lanes/{lane}/files/{ID}.
	ID      string
	Name    string // the name the user sees
	MIME    string
	Size    int64
	IsImage bool

	// Opener reads the snapshot through the lane's directory (files.Store.
	// Open); nil where there is no files store.
	Opener func() (*os.File, error) `json:"-"`
}

// Open opens the snapshot to upload it. The lane's agent can write its out
// directory: it may have replaced the snapshot, or out/ itself, with a
// link since it was taken, so the open never follows one out of the
// lane's directory, and only a regular file is opened.
func (f *SentFile) Open() (*os.File, error) {
	if f.Opener != nil {
		return f.Opener()
	}
	return openNoFollow(f.Path)
}

// openNoFollow opens path for reading unless it is a link or not a
// regular file: the check where no files store knows the lane's
// directory. It does not block on a FIFO.
func openNoFollow(path string) (*os.File, error) {
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if info, err := file.Stat(); err != nil || !info.Mode().IsRegular() {
		_ = file.Close()
		return nil, fmt.Errorf("gateway: %s is not a regular file", filepath.Base(path))
	}
	return file, nil
}

// TurnInfo describes the Codex turn a reply came from.
type TurnInfo struct {
	ThreadID string
	TurnID   string
	Status   string // "completed" | "failed" | "interrupted"
}

// Outbound is one message for a lane.
type Outbound struct {
	// ID is the outbox row the message is delivered from; 0 for previews
	// and last-resort direct sends. It is the delivery's identity: every
	// retry of a row, in this process or after a restart, carries the same
	// ID, so adapters key their idempotency (parts sent, nonces) on it.
	ID      int64
	Address Address
	Kind    OutKind
	Text    string
	ReplyTo string // platform message id to reply to, if the platform can
	// EditID, when set, asks the platform to replace the text of that earlier
	// message (a streamed preview) instead of sending a new one. Where that
	// edit fails, or the preview is not a message (the API lane), the
	// platform sends a new one.
	EditID string
	// InReplyTo is the platform message id of the inbound message this
	// outbound answers ("" for notices not caused by one message). The API
	// platform uses it to hand the reply to the waiting request.
	InReplyTo string
	// Turn is set on agent replies (also when a restart delivers them).
	Turn *TurnInfo
	// SentParts are the platform message ids of the parts of this delivery
	// the platform already accepted, part 0 first: recorded through Parts by
	// an earlier attempt, maybe by an earlier process. An adapter that
	// splits the text sends only the parts after them, and returns the
	// last one's id when none is left.
	SentParts []string
	// Parts records each part durably; nil for previews and direct sends
	// (ID 0), which are sent whole or not at all.
	Parts PartLog
	// Question is set on a message asking one of Codex's questions, so an
	// adapter can show it structured (the API lane's SSE stream); answers
	// come back through Gateway.AnswerQuestion, a button or a reply.
	Question *QuestionPrompt
	// Approval is set on the question of a pending chat approval, so an
	// adapter can show it structured (the API lane's SSE stream); the
	// decision comes back through Gateway.Decide, a button or /approve.
	Approval *PendingApproval
	// File is set on OutFile messages.
	File *SentFile
	// Silent asks the platform not to notify the user (Telegram
	// disable_notification); set on OutProgress.
	Silent bool
	// Progress is the structured work view of an OutProgress message.
	Progress *WorkView
	// Fork is set on /fork's answer (the API returns it as "fork").
	Fork *ForkInfo
	// Ping is the platform user id the message must notify (a long turn's
	// answer, lanes.notify_after): Discord mentions them; Telegram's reply
	// to their message notifies them already.
	Ping string
}

// PartLog is the durable record of one outbox row's parts. An adapter
// calls RecordPart (through Outbound.RecordPart) as soon as the platform
// accepted a part, before it sends the next, so after any crash the
// remaining parts are sent and none twice. For the last part it calls
// Outbound.RecordLastPart instead, and returns that part's id from Send.
// The outbox row id and the part index are the delivery's identity:
// adapters may derive idempotency keys (Discord's nonce) from them.
type PartLog interface {
	RecordPart(ctx context.Context, part int, platformMessageID string) error
	// DeferLastPart keeps the delivery's last part for the row's sent
	// mark, written in the same commit (the outbox's); an in-memory log
	// records it at once.
	DeferLastPart(part int, platformMessageID string)
}

// RecordPart records that the platform accepted part (0-based) as
// platformMessageID; without a PartLog there is nothing to record.
func (o Outbound) RecordPart(ctx context.Context, part int, platformMessageID string) error {
	if o.Parts == nil {
		return nil
	}
	return o.Parts.RecordPart(ctx, part, platformMessageID)
}

// RecordLastPart is RecordPart for the delivery's last part, the one whose
// id Send returns. Nothing is sent after it, so nothing depends on its
// record before Send returns: the outbox writes it with the sent mark (a
// one-part reply costs one commit, not two). The window in which a crash
// sends that part again is the same one RecordPart has, from the
// platform's acceptance to the commit.
func (o Outbound) RecordLastPart(_ context.Context, part int, platformMessageID string) error {
	if o.Parts != nil {
		o.Parts.DeferLastPart(part, platformMessageID)
	}
	return nil
}

// Platform is what every adapter implements, whole: a chat platform that
// can post, edit and upload (Telegram, Discord, Slack, Matrix) and the
// local API all can. What some platforms lack is an optional capability
// below (Typer, Deleter, ButtonSender, ButtonEditor, ProgressEditor,
// Authorizer). An adapter asserts at compile time what it implements:
//
//	var _ chat.Platform = (*Adapter)(nil)
type Platform interface {
	// Name is the platform name used in addresses ("telegram", ...).
	Name() string
	// Run connects and delivers inbound messages to sink until ctx ends.
	// It returns nil on a clean stop. The adapter checks the sender of
	// each message against its allowlist before it delivers it: the
	// gateway does not check again.
	Run(ctx context.Context, sink Sink) error
	// Ready is closed once the adapter is connected (logged in, listening),
	// so the daemon reports readiness only when it is true.
	Ready() <-chan struct{}
	// Send posts one message, splitting it at the platform's limit, and
	// returns the id of the last message posted (the one to edit later).
	// With out.EditID its first part replaces that message (the streamed
	// preview) where it can. Parts are recorded through out.RecordPart and
	// out.RecordLastPart.
	Send(ctx context.Context, out Outbound) (messageID string, err error)
	// Edit replaces the text of a message the platform posted (a streamed
	// preview, the work view's status message, an answered question).
	Edit(ctx context.Context, addr Address, messageID, text string) error
	// SendFile uploads out.File with out.Text as its caption and returns
	// the message's id: the platform's media upload, one part of the row.
	SendFile(ctx context.Context, out Outbound) (messageID string, err error)
	// OpenPlace (/fork) opens a new conversation place beside near's,
	// named title — a Discord thread in near's channel, a Telegram forum
	// topic in near's group, a new API lane, a Matrix room — and returns
	// its address. A place that cannot hold another (a private chat, a
	// group without topics) is an error wrapping ErrNoPlace whose text
	// says why.
	OpenPlace(ctx context.Context, near Address, title string) (Address, error)
}

// Deleter is an optional capability: remove a sent message. The gateway
// deletes a streamed preview that the final reply cannot replace in place
// (a turn that sent files: the reply must come after them).
type Deleter interface {
	Delete(ctx context.Context, addr Address, messageID string) error
}

// ForkInfo is on /fork's answer: the lane it made and that lane's thread.
type ForkInfo struct {
	Lane     string `json:"lane"` // session key
	ThreadID string `json:"thread_id"`
}

// Typer is an optional capability: show a typing indicator for a few seconds.
type Typer interface {
	Typing(ctx context.Context, addr Address) error
}

// ButtonSender is an optional capability: send a message with buttons.
type ButtonSender interface {
	SendButtons(ctx context.Context, out Outbound, buttons []Button) (messageID string, err error)
}

// ButtonEditor is an optional capability: replace a message's text and
// give it buttons (the work view's closing line offers Diff and Undo).
type ButtonEditor interface {
	EditButtons(ctx context.Context, addr Address, messageID, text string, buttons []Button) error
}

// Authorizer is an optional capability: whether a sender may use a lane
// by the platform's allowlist now. The adapter checks every message it
// delivers itself (it alone knows what the update carried: roles, the
// place); the gateway asks this only for a sender who is not sending, a
// schedule's maker whose schedule fires.
type Authorizer interface {
	Authorize(in Inbound) bool
}

// MakerAuthorizer is an optional capability of an Authorizer that cannot
// always tell from a sender's id alone (Discord allows by role, and a
// schedule keeps no roles): known is false when it cannot.
type MakerAuthorizer interface {
	AuthorizeMaker(addr Address, senderID string) (allowed, known bool)
}

// EveryMessageAnswered is an optional capability of a platform on which
// each message waits for an answer of its own (the API lane: a POST is
// answered with the reply to its message). A message that runs nothing,
// such as a typed answer to Codex's question, then gets a short receipt,
// so its sender is not left waiting for a reply that never comes.
type EveryMessageAnswered interface {
	AnswersEveryMessage()
}

// ProgressEditor is an optional capability of a platform that shows the
// work view structured (the API lane): edits of the status message come
// with the view. Platforms without it get Platform.Edit with the text.
type ProgressEditor interface {
	EditProgress(ctx context.Context, addr Address, messageID, text string, view WorkView) error
}

// Renamer is an optional capability: rename a conversation place that has
// a name of its own (a Discord thread, a Telegram forum topic), so it
// keeps the name its Codex thread was given elsewhere. The platform
// reports the rename back as an event like anyone's; an adapter that can
// tell its own renames apart drops them.
type Renamer interface {
	RenamePlace(ctx context.Context, addr Address, name string) error
}
