package ext

import (
	"context"
	"strings"

	"github.com/gatewayd/gatewayd/gateway/chat"
)

// RoomHooks are where features shape a message's text before it is
// recorded (the transcript, the journal and a rerun after a restart all
// hold what Codex was given): who said it in a shared room, what it
// replies to, what the room said between turns.
type RoomHooks interface {
	// OnText adjusts the text of a message before it is recorded, and of
	// an edit (in.Edited) before it replaces the waiting message's. The
	// hooks run in the order the features registered, each given the text
	// the one before made; the first is given in.Text.
	OnText(fn func(ctx context.Context, in chat.Inbound, text string) string)
	// OnAmbient takes a message of a shared room that was not addressed
	// to the gateway (in.Ambient): it starts no turn and is not recorded.
	// Without a hook it is dropped.
	OnAmbient(fn func(ctx context.Context, in chat.Inbound))
	// IsCommand reports whether text is a gateway command, which no
	// feature frames: "/new" must stay a command.
	IsCommand(text string) bool
	// Clustered reports whether several nodes share the database: another
	// node may then take a lane's messages.
	Clustered() bool
}

// SpeakerName is the sender's shown name without the characters that
// would let a name fake the frame "[name]: " ("]:", newlines).
func SpeakerName(in chat.Inbound) string {
	name := in.DisplayName
	if name == "" {
		name = in.SenderName
	}
	if name == "" {
		name = in.SenderID
	}
	name = strings.Join(strings.Fields(strings.NewReplacer("[", "(", "]", ")").Replace(name)), " ")
	if name == "" {
		return "someone"
	}
	return name
}
