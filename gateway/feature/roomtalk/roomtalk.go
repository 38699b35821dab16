// Package roomtalk is lanes.group_context: what a shared room says between
// the turns addressed to the gateway, handed to the next one.
package roomtalk

import (
	"context"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
)

// The room as context (lanes.group_context): in a shared room
// where only addressed messages start turns, what allowed members say in
// between is kept in the store (durable, never shown to Codex on its own)
// and the next addressed turn starts with it, newest last, at most
// lanes.context_messages lines and talkMax bytes. The platform checks
// the allowlist before it delivers anything, so a stranger's words are
// never kept.

// talkMax bounds the room's talk one turn carries.
const talkMax = 8 << 10

const header = "Messages since your last turn:"

// Store keeps the room's talk.
type Store interface {
	AddRoomLine(ctx context.Context, l store.RoomLine) error
	TakeRoomLines(ctx context.Context, sessionKey string, limit int) ([]store.RoomLine, error)
}

var _ Store = (*store.Store)(nil)

// Talk is the feature.
type Talk struct {
	on    bool
	limit int
	st    Store
	h     ext.Host
	log   *zap.Logger
	// taken holds the lanes whose talk this process took and that kept
	// nothing since, so their next turns skip the store's write. A lane
	// not in it (any lane after a restart) is asked. Not used in cluster
	// mode (ext.Host.Clustered): another node may keep a lane's talk.
	taken sync.Map
}

// New keeps a shared room's talk for its next turn when on
// (lanes.group_context), at most limit lines (lanes.context_messages; 0:
// config's default).
func New(on bool, limit int, st Store) *Talk {
	if limit < 1 {
		limit = config.Defaults().Lanes.ContextMessages
	}
	return &Talk{on: on, limit: limit, st: st}
}

// Name is the feature's name.
func (*Talk) Name() string { return "roomtalk" }

// Register takes the rooms' unaddressed messages and puts them before the
// next turn's text; off, it registers nothing and they are dropped. It
// must come after the feature that frames a message (speaker): the talk
// goes before the frame.
func (r *Talk) Register(h ext.Host) error {
	if !r.on {
		return nil
	}
	r.h, r.log = h, h.Logger()
	h.OnAmbient(r.keep)
	h.OnText(r.withTalk)
	return nil
}

// keep stores an ambient message. It is best effort: the room's talk is
// context, and a failure to keep it must not hold the platform's updates.
func (r *Talk) keep(ctx context.Context, in chat.Inbound) {
	if !ext.GroupPlace(in.Address.Kind) || strings.TrimSpace(in.Text) == "" {
		return
	}
	key := in.Address.SessionKey()
	err := r.st.AddRoomLine(ctx, store.RoomLine{SessionKey: key, Platform: in.Address.Platform,
		MessageID: in.MessageID, Sender: ext.SpeakerName(in), Text: in.Text, At: in.ReceivedAt})
	// After the write: a turn that took the lane's talk before it commits
	// must not leave the line unasked.
	r.taken.Delete(key)
	if err != nil {
		r.log.Warn("room.keep_failed", zap.String("lane", key), zap.Error(err))
	}
}

// withTalk puts the room's talk since the last turn before text, the
// addressed message that starts the next one. An edit takes none: its
// message took the talk when it came.
func (r *Talk) withTalk(ctx context.Context, in chat.Inbound, text string) string {
	if in.Edited || !ext.GroupPlace(in.Address.Kind) || text == "" || r.h.IsCommand(text) {
		return text // commands are no turns, so they take no talk
	}
	key := in.Address.SessionKey()
	if _, nothing := r.taken.Load(key); nothing && !r.h.Clustered() {
		return text // nothing kept since this process took the lane's talk
	}
	r.taken.Store(key, true)
	lines, err := r.st.TakeRoomLines(ctx, key, r.limit)
	if err != nil {
		r.taken.Delete(key)
		r.log.Warn("room.take_failed", zap.String("lane", key), zap.Error(err))
		return text
	}
	if talk := talkText(lines); talk != "" {
		return talk + "\n\n" + text
	}
	return text
}

// talkText is the lines as the turn shows them, the oldest dropped
// first past talkMax.
func talkText(lines []store.RoomLine) string {
	var shown []string
	size := len(header)
	for i := len(lines) - 1; i >= 0; i-- {
		line := "[" + lines[i].Sender + "]: " + strings.Join(strings.Fields(lines[i].Text), " ")
		if size+len(line)+1 > talkMax {
			break
		}
		size += len(line) + 1
		shown = append(shown, line)
	}
	if len(shown) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(header)
	for i := len(shown) - 1; i >= 0; i-- {
		b.WriteString("\n" + shown[i])
	}
	return b.String()
}
