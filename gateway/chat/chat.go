// Package chat is the vocabulary every part of gatewayd speaks about a
// conversation: the address of a lane and its session key, a message coming
// in, its files, a message going out with the buttons offered with it, and
// the Platform interface an adapter implements. It depends on nothing of the
// gateway, so adapters, the core and the features share it without
// importing each other.
package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gatewayd/gatewayd/files"
)

// ErrNoPlace: the chat cannot hold another conversation beside this one
// (a platform's answer to opening a place for /fork).
var ErrNoPlace = errors.New("this chat cannot hold another conversation")

// ErrCannotRename is wrapped by Renamer.RenamePlace for a place the
// platform cannot rename, or the bot may not (a private chat, a group, a
// thread without the right to manage it).
var ErrCannotRename = errors.New("this conversation cannot be renamed")

// LaneKind says what kind of conversation place a lane is.
type LaneKind string

const (
	LaneDM      LaneKind = "dm"      // a private chat with the bot
	LaneGroup   LaneKind = "group"   // a Telegram group (not a forum topic)
	LaneChannel LaneKind = "channel" // a Discord guild channel
	LaneThread  LaneKind = "thread"  // a Discord thread, or a Slack thread (channel + root ts)
	LaneTopic   LaneKind = "topic"   // a Telegram forum topic
	LaneAPI     LaneKind = "api"     // the local HTTP API lane
	LaneRoom    LaneKind = "room"    // a Matrix room (shared, like a group)
)

// Address names one lane on one platform. Adapters fill it in; the gateway
// derives the stable session key from it.
type Address struct {
	Platform string   // "telegram", "discord", "slack", "matrix", "api"
	Kind     LaneKind // what the lane is
	ChatID   string   // chat / channel / guild-channel / DM channel / Matrix room / API lane name
	TopicID  string   // Telegram forum topic, Discord thread, Slack thread root ts or Matrix thread root id; "" when none
	// UserID is set only for per-user lanes in shared channels (a config
	// choice); it then becomes part of the key.
	UserID string
}

// SessionKeyVersion prefixes every session key so the derivation can evolve
// without colliding with keys already stored.
const SessionKeyVersion = "v1"

// SessionKey derives the stable key of a lane. The format is documented in
// docs/platforms.md (session keys) and must not change for an existing version:
//
//	v1:telegram:dm:<chat>
//	v1:telegram:group:<chat>
//	v1:telegram:topic:<chat>:<topic>
//	v1:discord:dm:<channel>
//	v1:discord:channel:<channel>[:user:<user>]
//	v1:discord:thread:<thread>
//	v1:slack:dm:<channel>
//	v1:slack:thread:<channel>:<thread_ts>
//	v1:matrix:room:<room_id>
//	v1:matrix:thread:<room_id>:<root_event_id>
//	v1:api:<lane>
func (a Address) SessionKey() string {
	var b strings.Builder
	b.WriteString(SessionKeyVersion)
	b.WriteByte(':')
	b.WriteString(a.Platform)
	if a.Kind != LaneAPI {
		b.WriteByte(':')
		b.WriteString(string(a.Kind))
	}
	b.WriteByte(':')
	switch a.Kind {
	case LaneTopic:
		b.WriteString(a.ChatID)
		b.WriteByte(':')
		b.WriteString(a.TopicID)
	case LaneThread:
		if threadKeyNamesChat(a.Platform) {
			b.WriteString(a.ChatID)
			b.WriteByte(':')
		}
		b.WriteString(a.TopicID)
	default:
		b.WriteString(a.ChatID)
	}
	if a.UserID != "" {
		b.WriteString(":user:")
		b.WriteString(a.UserID)
	}
	return b.String()
}

// threadKeyNamesChat: a platform whose thread ids are unique only within
// their channel (a Slack thread is its root message's ts, a Matrix thread
// its root event's id in a room) keys a thread lane by channel and thread;
// Discord's thread ids are global, and its keys stay as they are.
func threadKeyNamesChat(platform string) bool {
	return platform == slackPlatform || platform == matrixPlatform
}

// slackPlatform is the Slack adapter's Address.Platform (its
// PlatformName, which this package cannot import).
const slackPlatform = "slack"

// Validate reports an address that cannot name a lane.
func (a Address) Validate() error {
	switch {
	case a.Platform == "":
		return errors.New("chat: address has no platform")
	case a.ChatID == "" && (a.Kind != LaneThread || threadKeyNamesChat(a.Platform)):
		return fmt.Errorf("chat: %s address has no chat id", a.Platform)
	case (a.Kind == LaneTopic || a.Kind == LaneThread) && a.TopicID == "":
		return fmt.Errorf("chat: %s %s address has no topic/thread id", a.Platform, a.Kind)
	}
	switch a.Kind {
	case LaneRoom:
		// Only Matrix keys a room (its ids have a grammar of their own); a
		// room of another platform would name a key that does not parse.
		if a.Platform != matrixPlatform {
			return fmt.Errorf("chat: %s has no room lanes", a.Platform)
		}
		return nil
	case LaneDM, LaneGroup, LaneChannel, LaneThread, LaneTopic, LaneAPI:
		return nil
	}
	return fmt.Errorf("chat: unknown lane kind %q", a.Kind)
}

// Inbound is one message (or button press) from a platform.
type Inbound struct {
	Address     Address
	MessageID   string // platform message id; with Address.Platform it identifies a redelivery
	SenderID    string
	SenderName  string
	SenderRoles []string // Discord role ids; empty elsewhere
	// SenderAdmin: the platform says the sender administers the place
	// (Discord: Manage Channels), so they decide any turn's approvals and
	// questions there (codex.approvers).
	SenderAdmin bool
	Text        string
	ReplyTo     string // id of the message this one replies to, if any
	Mentioned   bool   // the bot was mentioned, replied to, or addressed with a command
	ReceivedAt  time.Time
	// Callback is set, and Text empty, when the inbound is a button press;
	// it carries the Button.ID that was pressed.
	Callback string
	// Attachments are the files sent with the message (Text is then the
	// caption, maybe empty). Deliver stores them before it returns.
	Attachments []Attachment
	// Title is the chat's, topic's or thread's name when the update carries
	// it ("" otherwise): it names a lane in the console (feature/title).
	Title string
	// DisplayName is the name people see for the sender (Telegram's first
	// and last name, Discord's display name); "" falls back to SenderName.
	DisplayName string
	// Quote is the message this one replies to, when the platform sent it
	// along (feature/speaker puts it into the turn's text).
	Quote *Quote
	// Edited: the sender edited the message MessageID, delivered before;
	// Text is its new text (edits.go).
	Edited bool
	// Ambient: said in a shared room without addressing the bot. It never
	// starts a turn; with lanes.group_context it is kept for the lane's
	// next addressed turn (feature/roomtalk), else dropped.
	Ambient bool
	// Renamed: no message, the lane's place (a Discord thread, a Telegram
	// forum topic) was renamed to Title. Nothing is recorded; the features
	// hear it (ext.NameHooks). MessageID may be "": a rename is no message.
	Renamed bool
}

// Quote is a replied-to message as the reply's update carries it.
type Quote struct {
	Author  string // its sender's display name
	FromBot bool   // it is one of the bot's own messages (Codex's answer)
	Text    string
}

// Attachment is one file sent with an inbound message. An adapter fills in
// what the platform says of it and Open; the gateway stores it under
// <state_dir>/files while Deliver runs, before the message is recorded, so
// an adapter that acknowledges the message after Deliver has its files on
// disk. Path is set when the file was stored before Deliver (the API lane
// streams a multipart body straight into the store).
type Attachment struct {
	Name string // the sender's file name; sanitised when stored
	MIME string // as the platform reported it; "" unknown (the stored file's type is detected)
	Size int64  // as the platform reported it; 0 unknown
	// Open fetches the file's bytes (a platform download). The gateway
	// closes what it returns.
	Open func(ctx context.Context) (io.ReadCloser, error)
	// Stored is set instead of Open for a file already saved.
	Stored *files.Saved
	// Err is set instead of Open when the adapter could not get the file at
	// all (a failed download); the lane is told, the rest of the message runs.
	Err error
}

// Button is one choice offered with a message.
type Button struct {
	ID    string // opaque; comes back as Inbound.Callback
	Label string
}

// Age rounds a duration for telling: to the second under a minute, to the
// minute above; a negative one (a clock step) is 0.
func Age(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d < time.Minute:
		return d.Round(time.Second)
	default:
		return d.Round(time.Minute)
	}
}

// SenderLimitError is Deliver's answer on the API lane to a sender past
// lanes.max_per_minute: nothing of the message was stored; it may be sent
// again after RetryAfter (whole seconds). Chat lanes hear a notice
// instead, and their Deliver reports no error so the update is
// acknowledged.
type SenderLimitError struct {
	Limit      int
	RetryAfter time.Duration
}

func (e *SenderLimitError) Error() string {
	return fmt.Sprintf("gateway: more than %d messages a minute from this sender (lanes.max_per_minute); "+
		"this one was refused, not stored; send it again in %s", e.Limit, e.RetryAfter)
}
