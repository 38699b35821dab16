package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
)

// The deliverer is also how the core and its modules speak to a lane:
// notices go through the store's outbox (durable, in lane order); one that
// cannot be written is sent straight to the platform as a last resort.

// notify enqueues a gateway notice for a lane. inReplyTo names the inbound
// message it answers ("" for notices about the lane in general).
func (d *deliverer) notify(ctx context.Context, addr Address, inReplyTo, text string) {
	_, err := d.st.Enqueue(ctx, noticeFor(addr, inReplyTo, text))
	if err != nil {
		d.log.Error("outbox.enqueue_failed", zap.String("lane", addr.SessionKey()), zap.Error(err))
		d.sendDirect(ctx, addr, inReplyTo, "", text)
		return
	}
	d.poke()
}

// errFileNotSent: the gateway keeps no files, or the file is larger than
// it sends.
var errFileNotSent = errors.New("gateway: no files store, or the file is too large to send")

// sendData enqueues data as a file for a lane, in the files store until
// it is delivered; a failure is logged and nothing is sent.
func (d *deliverer) sendData(ctx context.Context, addr Address, inReplyTo string, f ext.File) error {
	if d.files == nil || int64(len(f.Data)) > d.files.Limits().MaxBytes {
		return errFileNotSent
	}
	key := addr.SessionKey()
	tmpDir, err := os.MkdirTemp("", "gatewayd-out-")
	if err != nil {
		d.log.Warn("outbox.file_failed", zap.String("lane", key), zap.Error(err))
		return fmt.Errorf("gateway: send %s: %w", f.Name, err)
	}
	defer os.RemoveAll(tmpDir)
	src := filepath.Join(tmpDir, filepath.Base(f.Name))
	if err := os.WriteFile(src, f.Data, 0o600); err != nil {
		d.log.Warn("outbox.file_failed", zap.String("lane", key), zap.Error(err))
		return fmt.Errorf("gateway: send %s: %w", f.Name, err)
	}
	copied, err := d.files.CopyOut(key, src, []string{tmpDir})
	if err != nil {
		d.log.Warn("outbox.file_failed", zap.String("lane", key), zap.Error(err))
		return fmt.Errorf("gateway: send %s: %w", f.Name, err)
	}
	defer d.files.Release(copied)
	row := noticeFor(addr, inReplyTo, f.Caption)
	row.OutKind, row.FilePath, row.FileName, row.FileMIME, row.FileSize = store.OutboxFile, copied, f.Name, f.MIME, int64(len(f.Data))
	if _, err := d.st.Enqueue(ctx, row); err != nil {
		d.log.Error("outbox.enqueue_failed", zap.String("lane", key), zap.Error(err))
		_ = d.files.Remove(key, copied)
		return fmt.Errorf("gateway: send %s: %w", f.Name, err)
	}
	d.poke()
	return nil
}

// noticeFor is the outbox row of a gateway notice for a lane.
func noticeFor(addr Address, inReplyTo, text string) store.OutboxMessage {
	return store.OutboxMessage{SessionKey: addr.SessionKey(), Platform: addr.Platform,
		Kind: string(addr.Kind), ChatID: addr.ChatID, TopicID: addr.TopicID, UserID: addr.UserID,
		Text: text, ReplyTo: inReplyTo}
}

// sendDirect is the last resort when the outbox cannot be written: one
// attempt straight to the platform, logged if it fails.
func (d *deliverer) sendDirect(ctx context.Context, addr Address, inReplyTo, editID, text string) {
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
		d.notify(ctx, addr, replyTo, text)
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
		d.notify(later, out.Address, out.InReplyTo, out.Text)
		return ""
	}
	d.obs.Outbound(out.Address.Platform, err)
	if err != nil {
		d.log.Warn("outbox.ask_failed", zap.String("lane", out.Address.SessionKey()), zap.Error(err))
		d.notify(later, out.Address, out.InReplyTo, out.Text)
		return ""
	}
	return id
}

// addressOf rebuilds a lane address from stored routing fields.
func addressOf(platform, kind, chatID, topicID, userID string) Address {
	return Address{Platform: platform, Kind: LaneKind(kind), ChatID: chatID, TopicID: topicID, UserID: userID}
}

// addressOfLane rebuilds the address of a stored lane.
func addressOfLane(l store.Lane) Address {
	return addressOf(l.Platform, l.Kind, l.ChatID, l.TopicID, l.UserID)
}
