package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/outbox"
	"github.com/gatewayd/gatewayd/store"
)

// deliverer is how the core speaks to a lane: the durable outbox (package
// outbox: notices, files, retries, held rows) and its transport, the
// platform side the outbox reaches rows through, which also sends what
// the outbox does not carry (buttons, a question while its request waits).
type deliverer struct {
	*outbox.Deliverer
	platforms map[string]Platform
	files     *files.Store // opens the snapshots of file rows (nil: no files store)
	log       *zap.Logger
	obs       Observer
	// serves, in cluster mode, says which lanes this node may send to.
	serves func(sessionKey string) bool
}

func newDeliverer(st outbox.Store, platforms map[string]Platform, fs *files.Store, log *zap.Logger, obs Observer, now func() time.Time) *deliverer {
	d := &deliverer{platforms: platforms, files: fs, log: log, obs: obs}
	d.Deliverer = outbox.New(st, d, fs, log, obs, now)
	return d
}

// setLaneGate puts delivery in cluster mode (Gateway.SetLaneGate).
func (d *deliverer) setLaneGate(lg LaneGate) {
	d.serves = lg.Serves
	d.SetLaneGate(lg.Serves, lg.OwnedLanes)
}

var _ outbox.Transport = (*deliverer)(nil)

// sendTimeout bounds a send straight to a platform, as it bounds the
// outbox's.
const sendTimeout = outbox.SendTimeout

// SendRow implements outbox.Transport: it rebuilds the row's platform
// message and sends it.
func (d *deliverer) SendRow(ctx context.Context, m store.OutboxMessage, parts *outbox.Parts) (string, error) {
	p, ok := d.platforms[m.Platform]
	if !ok {
		return "", &outbox.NoPlatformError{Platform: m.Platform}
	}
	return sendOutbound(ctx, p, d.outboundOf(m, parts))
}

// outboundOf rebuilds the platform message from an outbox row: its kind
// and turn as stored, the parts an earlier attempt sent, and the row's
// part log, so every attempt (after a restart too) is the same delivery.
func (d *deliverer) outboundOf(m store.OutboxMessage, parts PartLog) Outbound {
	out := Outbound{ID: m.ID, Address: addressOf(m.Platform, m.Kind, m.ChatID, m.TopicID, m.UserID),
		Kind: OutNotice, Text: m.Text, ReplyTo: m.ReplyTo, InReplyTo: m.ReplyTo, EditID: m.EditID,
		SentParts: m.SentParts, Parts: parts}
	switch m.OutKind {
	case store.OutboxReply:
		out.Kind = OutReply
		out.Turn = &TurnInfo{ThreadID: m.ThreadID, TurnID: m.TurnID, Status: m.TurnStatus}
	case store.OutboxFile:
		out.Kind = OutFile
		out.Turn = &TurnInfo{ThreadID: m.ThreadID, TurnID: m.TurnID, Status: m.TurnStatus}
		out.File = d.sentFile(m)
	}
	if m.ForkLane != "" {
		out.Fork = &ForkInfo{Lane: m.ForkLane, ThreadID: m.ThreadID}
	}
	out.Ping = m.Ping
	return out
}

// sentFile is the file of a file row, read through the lane's directory
// in the files store.
func (d *deliverer) sentFile(m store.OutboxMessage) *SentFile {
	f := sentFileOf(m)
	if d.files != nil {
		f.Opener = func() (*os.File, error) { return d.files.Open(m.SessionKey, m.FilePath) }
	}
	return f
}

// sendOutbound delivers out: a file row through the platform's upload,
// any other as a message.
func sendOutbound(ctx context.Context, p Platform, out Outbound) (string, error) {
	if out.File != nil {
		return p.SendFile(ctx, out)
	}
	return p.Send(ctx, out)
}

// SendDirect implements outbox.Transport: the last resort when the
// outbox cannot be written, one attempt straight to the platform, logged
// if it fails.
func (d *deliverer) SendDirect(ctx context.Context, addr Address, inReplyTo, editID, text string) {
	if d.serves != nil && !d.serves(addr.SessionKey()) {
		d.log.Warn("outbox.direct_not_owner", zap.String("lane", addr.SessionKey()))
		return
	}
	p, ok := d.platforms[addr.Platform]
	if !ok {
		d.log.Error("outbox.direct_no_platform", zap.String("platform", addr.Platform))
		return
	}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	_, err := p.Send(sctx, Outbound{Address: addr, Kind: OutNotice, Text: text, ReplyTo: inReplyTo,
		InReplyTo: inReplyTo, EditID: editID})
	d.obs.Outbound(addr.Platform, err)
	if err != nil {
		d.log.Error("outbox.direct_failed", zap.String("lane", addr.SessionKey()), zap.Error(err))
	}
}

// sendWithButtons shows text with buttons where the platform has them, and
// as a plain notice (through the outbox) elsewhere or if that fails. The
// buttons are sent directly, as approval questions are: the outbox keeps
// no buttons, and the text alone still answers.
func (d *deliverer) sendWithButtons(ctx context.Context, addr Address, replyTo, text string, buttons []Button) {
	if _, ok := d.platforms[addr.Platform].(ButtonSender); !ok || len(buttons) == 0 {
		d.Notify(ctx, addr, replyTo, text)
		return
	}
	d.askDirect(ctx, Outbound{Address: addr, Kind: OutNotice, Text: text, ReplyTo: replyTo, InReplyTo: replyTo}, buttons)
}

// askDirect sends out at once, with buttons where the platform has them:
// a question (an approval's, Codex's) is only worth showing while its
// request waits, and the outbox keeps no buttons. When the platform defers
// it (the API lane with no request open) or refuses it, the outbox takes
// the text. It returns the message id of a direct send, "" otherwise.
func (d *deliverer) askDirect(ctx context.Context, out Outbound, buttons []Button) string {
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	var id string
	var err error
	p := d.platforms[out.Address.Platform]
	bs, hasButtons := p.(ButtonSender)
	switch {
	case p == nil:
		err = fmt.Errorf("gateway: no platform %q", out.Address.Platform)
	case hasButtons && len(buttons) > 0:
		id, err = bs.SendButtons(sctx, out, buttons)
	default:
		id, err = p.Send(sctx, out)
	}
	// The notice outlives ctx, which may be a request's that ends when
	// codex withdraws it.
	later := context.WithoutCancel(ctx)
	if errors.Is(err, ErrDeferred) {
		d.log.Info("outbox.ask_deferred", zap.String("lane", out.Address.SessionKey()))
		d.Notify(later, out.Address, out.InReplyTo, out.Text)
		return ""
	}
	d.obs.Outbound(out.Address.Platform, err)
	if err != nil {
		d.log.Warn("outbox.ask_failed", zap.String("lane", out.Address.SessionKey()), zap.Error(err))
		d.Notify(later, out.Address, out.InReplyTo, out.Text)
		return ""
	}
	return id
}

// Delivered marks a deferred outbox row sent: the platform handed it over
// (outbox's deferred delivery).
func (g *Gateway) Delivered(ctx context.Context, id int64, platformMessageID string) error {
	return g.out.Delivered(ctx, id, platformMessageID)
}

// Redeliver makes the lane's held rows due again.
func (g *Gateway) Redeliver(ctx context.Context, sessionKey string) error {
	return g.out.Redeliver(ctx, sessionKey)
}

// addressOf rebuilds a lane address from stored routing fields.
func addressOf(platform, kind, chatID, topicID, userID string) Address {
	return Address{Platform: platform, Kind: LaneKind(kind), ChatID: chatID, TopicID: topicID, UserID: userID}
}

// addressOfLane rebuilds the address of a stored lane.
func addressOfLane(l store.Lane) Address {
	return addressOf(l.Platform, l.Kind, l.ChatID, l.TopicID, l.UserID)
}
