package gateway

import (
	"context"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// The room as context (lanes.group_context): in a shared room
// where only addressed messages start turns, what allowed members say in
// between is kept in the store (durable, never shown to Codex on its own)
// and the next addressed turn starts with it, newest last, at most
// Config.ContextMessages lines and roomTalkMax bytes. The platform checks
// the allowlist before it delivers anything, so a stranger's words are
// never kept.

// roomTalkMax bounds the room's talk one turn carries.
const roomTalkMax = 8 << 10

const roomTalkHeader = "Messages since your last turn:"

type roomTalk struct {
	st interface {
		AddRoomLine(ctx context.Context, l store.RoomLine) error
		TakeRoomLines(ctx context.Context, sessionKey string, limit int) ([]store.RoomLine, error)
	}
	on    bool
	limit int
	log   *zap.Logger
	cmds  *commandSet // commands are no turns, so they take no talk
	// taken holds the lanes whose talk this process took and that kept
	// nothing since, so their next turns skip the store's write. A lane
	// not in it (any lane after a restart) is asked. Off in cluster mode
	// (shared): another node may keep a lane's talk.
	taken  sync.Map
	shared bool
}

// keep stores an ambient message. It is best effort: the room's talk is
// context, and a failure to keep it must not hold the platform's updates.
func (r *roomTalk) keep(ctx context.Context, in Inbound) {
	if !r.on || !isGroupPlace(in.Address.Kind) || strings.TrimSpace(in.Text) == "" {
		return
	}
	key := in.Address.SessionKey()
	err := r.st.AddRoomLine(ctx, store.RoomLine{SessionKey: key, Platform: in.Address.Platform,
		MessageID: in.MessageID, Sender: speakerName(in), Text: in.Text, At: in.ReceivedAt})
	// After the write: a turn that took the lane's talk before it commits
	// must not leave the line unasked.
	r.taken.Delete(key)
	if err != nil {
		r.log.Warn("room.keep_failed", zap.String("lane", key), zap.Error(err))
	}
}

// withTalk puts the room's talk since the last turn before text, the
// addressed message that starts the next one.
func (r *roomTalk) withTalk(ctx context.Context, in Inbound, text string) string {
	if !r.on || !isGroupPlace(in.Address.Kind) || !r.cmds.runsAsTurn(text, nil) {
		return text
	}
	key := in.Address.SessionKey()
	if _, nothing := r.taken.Load(key); nothing && !r.shared {
		return text // nothing kept since this process took the lane's talk
	}
	r.taken.Store(key, true)
	lines, err := r.st.TakeRoomLines(ctx, key, r.limit)
	if err != nil {
		r.taken.Delete(key)
		r.log.Warn("room.take_failed", zap.String("lane", key), zap.Error(err))
		return text
	}
	if talk := roomTalkText(lines); talk != "" {
		return talk + "\n\n" + text
	}
	return text
}

// roomTalkText is the lines as the turn shows them, the oldest dropped
// first past roomTalkMax.
func roomTalkText(lines []store.RoomLine) string {
	var shown []string
	size := len(roomTalkHeader)
	for i := len(lines) - 1; i >= 0; i-- {
		line := "[" + lines[i].Sender + "]: " + strings.Join(strings.Fields(lines[i].Text), " ")
		if size+len(line)+1 > roomTalkMax {
			break
		}
		size += len(line) + 1
		shown = append(shown, line)
	}
	if len(shown) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(roomTalkHeader)
	for i := len(shown) - 1; i >= 0; i-- {
		b.WriteString("\n" + shown[i])
	}
	return b.String()
}
