package gateway

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// The files a turn sends (the feature sendfile's send_file tool, the
// images codex generated) are committed with the turn as outbox rows of
// kind file, before the reply; this is the core's part of it: the turn
// holds them, the commit addresses them, the outbox delivers them, and the
// files store's holds are lifted when the turn is over.

// ToolCall serves the dynamic tools features registered
// (codex.Options.ToolCall). A call of a tool no feature offers is refused
// with a reason the agent reads.
func (g *Gateway) ToolCall(ctx context.Context, call codex.ToolCall) codex.ToolResult {
	fn := g.host.tools[call.Tool]
	if fn == nil {
		return codex.ToolResult{Text: fmt.Sprintf("unknown tool %q", call.Tool)}
	}
	return fn(ctx, call)
}

// releaseFiles lifts the files store's holds on a turn's copies once the
// turn is over: committed, their pending rows keep them (files.OutInUse);
// not committed, nothing will send them and the quota may take them.
func releaseFiles(fs *files.Store) func(sent []store.OutboxMessage) {
	return func(sent []store.OutboxMessage) {
		if fs == nil || len(sent) == 0 {
			return
		}
		paths := make([]string, 0, len(sent))
		for _, f := range sent {
			paths = append(paths, f.FilePath)
		}
		fs.Release(paths...)
	}
}

// previewDropper deletes a streamed preview the reply does not replace
// (the turn's files went out after it, so the reply is a new message),
// where the platform can; elsewhere it stays, an earlier draft of the
// reply that follows.
type previewDropper struct {
	platforms map[string]Platform // filled by AddPlatform before Run
	obs       Observer
	log       *zap.Logger
}

func (p previewDropper) drop(ctx context.Context, addr Address, id string) {
	if id == "" {
		return
	}
	d, ok := p.platforms[addr.Platform].(Deleter)
	if !ok {
		return
	}
	if err := d.Delete(ctx, addr, id); err != nil {
		p.obs.PlatformError(addr.Platform, "delete")
		p.log.Info("preview.delete_failed", zap.String("platform", addr.Platform), zap.Error(err))
	}
}

// turnFiles takes the files the turn's agent sent, so they are committed
// with it; addressed like the reply.
func turnFiles(cur *turnState, reply *store.OutboxMessage) []store.OutboxMessage {
	if cur == nil {
		return nil
	}
	out := make([]store.OutboxMessage, 0, len(cur.files))
	for _, f := range cur.files {
		f.SessionKey, f.Platform, f.Kind = reply.SessionKey, reply.Platform, reply.Kind
		f.ChatID, f.TopicID, f.UserID, f.ReplyTo = reply.ChatID, reply.TopicID, reply.UserID, reply.ReplyTo
		out = append(out, f)
	}
	return out
}
