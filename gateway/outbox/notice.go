package outbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
)

// The deliverer is also how the core and its features speak to a lane:
// notices go through the store's outbox (durable, in lane order); one that
// cannot be written is sent straight to the platform as a last resort.

// Notify enqueues a gateway notice for a lane. inReplyTo names the inbound
// message it answers ("" for notices about the lane in general).
func (d *Deliverer) Notify(ctx context.Context, addr chat.Address, inReplyTo, text string) {
	d.Post(ctx, addr, Notice(addr, inReplyTo, text))
}

// Post enqueues row, a notice for addr (Notice, with more of its fields
// set), and wakes the deliverer. A row that cannot be written is sent
// straight to the platform as a last resort.
func (d *Deliverer) Post(ctx context.Context, addr chat.Address, row store.OutboxMessage) {
	if _, err := d.st.Enqueue(ctx, row); err != nil {
		d.log.Error("outbox.enqueue_failed", zap.String("lane", addr.SessionKey()), zap.Error(err))
		d.tr.SendDirect(ctx, addr, row.ReplyTo, "", row.Text)
		return
	}
	d.Poke()
}

// Notice is the outbox row of a gateway notice for a lane.
func Notice(addr chat.Address, inReplyTo, text string) store.OutboxMessage {
	return store.OutboxMessage{SessionKey: addr.SessionKey(), Platform: addr.Platform,
		Kind: string(addr.Kind), ChatID: addr.ChatID, TopicID: addr.TopicID, UserID: addr.UserID,
		Text: text, ReplyTo: inReplyTo}
}

// ErrFileNotSent: the gateway keeps no files, or the file is larger than
// it sends.
var ErrFileNotSent = errors.New("gateway: no files store, or the file is too large to send")

// SendData enqueues data as a file for a lane, in the files store until
// it is delivered; a failure is logged and nothing is sent.
func (d *Deliverer) SendData(ctx context.Context, addr chat.Address, inReplyTo string, f ext.File) error {
	if d.files == nil || int64(len(f.Data)) > d.files.Limits().MaxBytes {
		return ErrFileNotSent
	}
	key := addr.SessionKey()
	tmpDir, err := os.MkdirTemp("", "gatewayd-out-")
	if err != nil {
		d.log.Warn("outbox.file_failed", zap.String("lane", key), zap.Error(err))
		return fmt.Errorf("outbox: send %s: %w", f.Name, err)
	}
	defer os.RemoveAll(tmpDir)
	src := filepath.Join(tmpDir, filepath.Base(f.Name))
	if err := os.WriteFile(src, f.Data, 0o600); err != nil {
		d.log.Warn("outbox.file_failed", zap.String("lane", key), zap.Error(err))
		return fmt.Errorf("outbox: send %s: %w", f.Name, err)
	}
	copied, err := d.files.CopyOut(key, src, []string{tmpDir})
	if err != nil {
		d.log.Warn("outbox.file_failed", zap.String("lane", key), zap.Error(err))
		return fmt.Errorf("outbox: send %s: %w", f.Name, err)
	}
	defer d.files.Release(copied)
	row := Notice(addr, inReplyTo, f.Caption)
	row.OutKind, row.FilePath, row.FileName, row.FileMIME, row.FileSize = store.OutboxFile, copied, f.Name, f.MIME, int64(len(f.Data))
	if _, err := d.st.Enqueue(ctx, row); err != nil {
		d.log.Error("outbox.enqueue_failed", zap.String("lane", key), zap.Error(err))
		_ = d.files.Remove(key, copied)
		return fmt.Errorf("outbox: send %s: %w", f.Name, err)
	}
	d.Poke()
	return nil
}
