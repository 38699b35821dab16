package outbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/store"
)

// Courier is how the core speaks to a lane: the durable outbox
// (Deliverer: notices, files, retries, held rows) and its transport, the
// platforms running here, which also carry what the outbox does not
// (buttons, a question while its request waits).
type Courier struct {
	*Deliverer
	*Platforms
}

// NewCourier delivers st's rows to platforms, which the caller may still
// fill before the first delivery. fs keeps the files of file rows (nil:
// no files are sent).
func NewCourier(st Store, platforms map[string]chat.Platform, fs *files.Store, log *zap.Logger, obs Observer, now func() time.Time) *Courier {
	p := &Platforms{byName: platforms, files: fs, log: log, obs: obs}
	return &Courier{Deliverer: New(st, p, fs, log, obs, now), Platforms: p}
}

// SetLaneGate puts delivery in cluster mode: only the rows of the lanes
// owned lists are read, and only lanes serves accepts are sent to, through
// the outbox or directly.
func (c *Courier) SetLaneGate(serves func(sessionKey string) bool, owned func() []string) {
	c.Platforms.serves = serves
	c.Deliverer.SetLaneGate(serves, owned)
}

// Platforms is the Transport to the platforms running here, by name.
type Platforms struct {
	byName map[string]chat.Platform
	files  *files.Store // opens the snapshots of file rows (nil: no files store)
	log    *zap.Logger
	obs    Observer
	// serves, in cluster mode, says which lanes this node may send to.
	serves func(sessionKey string) bool
}

var _ Transport = (*Platforms)(nil)

// SendRow implements Transport: it rebuilds the row's platform message
// and sends it.
func (p *Platforms) SendRow(ctx context.Context, m store.OutboxMessage, parts *Parts) (string, error) {
	pl, ok := p.byName[m.Platform]
	if !ok {
		return "", &NoPlatformError{Platform: m.Platform}
	}
	out := p.outboundOf(m, parts)
	if out.File != nil {
		return pl.SendFile(ctx, out)
	}
	return pl.Send(ctx, out)
}

// outboundOf rebuilds the platform message from an outbox row: its kind
// and turn as stored, the parts an earlier attempt sent, and the row's
// part log, so every attempt (after a restart too) is the same delivery.
func (p *Platforms) outboundOf(m store.OutboxMessage, parts chat.PartLog) chat.Outbound {
	addr := chat.Address{Platform: m.Platform, Kind: chat.LaneKind(m.Kind), ChatID: m.ChatID, TopicID: m.TopicID, UserID: m.UserID}
	out := chat.Outbound{ID: m.ID, Address: addr, Kind: chat.OutNotice, Text: m.Text, ReplyTo: m.ReplyTo,
		InReplyTo: m.ReplyTo, EditID: m.EditID, SentParts: m.SentParts, Parts: parts, Ping: m.Ping}
	switch m.OutKind {
	case store.OutboxReply:
		out.Kind = chat.OutReply
		out.Turn = &chat.TurnInfo{ThreadID: m.ThreadID, TurnID: m.TurnID, Status: m.TurnStatus}
	case store.OutboxFile:
		out.Kind = chat.OutFile
		out.Turn = &chat.TurnInfo{ThreadID: m.ThreadID, TurnID: m.TurnID, Status: m.TurnStatus}
		out.File = p.sentFile(m)
	}
	if m.ForkLane != "" {
		out.Fork = &chat.ForkInfo{Lane: m.ForkLane, ThreadID: m.ThreadID}
	}
	return out
}

// sentFile is the file of a file row, read through the lane's directory
// in the files store.
func (p *Platforms) sentFile(m store.OutboxMessage) *chat.SentFile {
	f := SentFileOf(m)
	if p.files != nil {
		f.Opener = func() (*os.File, error) { return p.files.Open(m.SessionKey, m.FilePath) }
	}
	return f
}

// SentFileOf is the file of an outbox file row.
func SentFileOf(m store.OutboxMessage) *chat.SentFile {
	isImage := false
	switch m.FileMIME {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		isImage = true
	}
	return &chat.SentFile{Path: m.FilePath, ID: filepath.Base(m.FilePath), Name: m.FileName, MIME: m.FileMIME,
		Size: m.FileSize, IsImage: isImage}
}

// SendDirect implements Transport: the last resort when the outbox cannot
// be written, one attempt straight to the platform, logged if it fails.
func (p *Platforms) SendDirect(ctx context.Context, addr chat.Address, inReplyTo, editID, text string) {
	if p.serves != nil && !p.serves(addr.SessionKey()) {
		p.log.Warn("outbox.direct_not_owner", zap.String("lane", addr.SessionKey()))
		return
	}
	pl, ok := p.byName[addr.Platform]
	if !ok {
		p.log.Error("outbox.direct_no_platform", zap.String("platform", addr.Platform))
		return
	}
	sctx, cancel := context.WithTimeout(ctx, SendTimeout)
	defer cancel()
	_, err := pl.Send(sctx, chat.Outbound{Address: addr, Kind: chat.OutNotice, Text: text, ReplyTo: inReplyTo,
		InReplyTo: inReplyTo, EditID: editID})
	p.obs.Outbound(addr.Platform, err)
	if err != nil {
		p.log.Error("outbox.direct_failed", zap.String("lane", addr.SessionKey()), zap.Error(err))
	}
}

// Platform is the platform of that name running here (nil: none).
func (p *Platforms) Platform(name string) chat.Platform { return p.byName[name] }

// SendWithButtons shows text with buttons where the platform has them,
// and as a plain notice (through the outbox) elsewhere or if that fails.
// The buttons are sent directly, as approval questions are: the outbox
// keeps no buttons, and the text alone still answers.
func (c *Courier) SendWithButtons(ctx context.Context, addr chat.Address, replyTo, text string, buttons []chat.Button) {
	if _, ok := c.byName[addr.Platform].(chat.ButtonSender); !ok || len(buttons) == 0 {
		c.Notify(ctx, addr, replyTo, text)
		return
	}
	c.AskDirect(ctx, chat.Outbound{Address: addr, Kind: chat.OutNotice, Text: text, ReplyTo: replyTo, InReplyTo: replyTo}, buttons)
}

// AskDirect sends out at once, with buttons where the platform has them:
// a question (an approval's, Codex's) is only worth showing while its
// request waits, and the outbox keeps no buttons. When the platform defers
// it (the API lane with no request open) or refuses it, the outbox takes
// the text. It returns the message id of a direct send, "" otherwise.
func (c *Courier) AskDirect(ctx context.Context, out chat.Outbound, buttons []chat.Button) string {
	id, err := c.ask(ctx, out, buttons)
	// The notice outlives ctx, which may be a request's that ends when
	// codex withdraws it.
	later := context.WithoutCancel(ctx)
	if errors.Is(err, ErrDeferred) {
		c.Platforms.log.Info("outbox.ask_deferred", zap.String("lane", out.Address.SessionKey()))
		c.Notify(later, out.Address, out.InReplyTo, out.Text)
		return ""
	}
	c.Platforms.obs.Outbound(out.Address.Platform, err)
	if err != nil {
		c.Platforms.log.Warn("outbox.ask_failed", zap.String("lane", out.Address.SessionKey()), zap.Error(err))
		c.Notify(later, out.Address, out.InReplyTo, out.Text)
		return ""
	}
	return id
}

// ask is one direct send of out, with its buttons where the platform
// takes them.
func (p *Platforms) ask(ctx context.Context, out chat.Outbound, buttons []chat.Button) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, SendTimeout)
	defer cancel()
	pl := p.byName[out.Address.Platform]
	if pl == nil {
		return "", fmt.Errorf("gateway: no platform %q", out.Address.Platform)
	}
	if bs, ok := pl.(chat.ButtonSender); ok && len(buttons) > 0 {
		return bs.SendButtons(sctx, out, buttons)
	}
	return pl.Send(sctx, out)
}
