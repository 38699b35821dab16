package store

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors callers branch on. Every error the store returns wraps one
// of these or names its cause in its text; none is swallowed.
var (
	// ErrStaleGeneration refuses a conditional write computed under a
	// generation the lane has since left (/new, /reset, /stop).
	ErrStaleGeneration = errors.New("store: stale generation")
	// ErrNotFound is returned when the lane, message or row does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrLocked means another process (another gatewayd) owns the database.
	ErrLocked = errors.New("store: database is owned by another gatewayd process")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("store: closed")
	// ErrDiskFull wraps SQLITE_FULL: the disk (or the configured page limit)
	// has no room; the submission was not applied.
	ErrDiskFull = errors.New("store: database or disk is full (SQLITE_FULL or ENOSPC)")
	// ErrReadOnly wraps SQLITE_READONLY and EROFS/EACCES on the database
	// files; the submission was not applied.
	ErrReadOnly = errors.New("store: database is read-only (SQLITE_READONLY or EROFS)")
	// ErrIO wraps SQLITE_IOERR: the operating system failed a read, write or
	// fsync; the submission was not applied.
	ErrIO = errors.New("store: disk I/O error (SQLITE_IOERR)")
	// ErrInvalid is returned for arguments the store refuses to record
	// (an empty session key or turn id, an unknown state).
	ErrInvalid = errors.New("store: invalid argument")
	// ErrThreadHeld refuses to attach a lane to a Codex thread another
	// lane is bound to: two lanes writing one thread would interleave.
	ErrThreadHeld = errors.New("store: the thread is bound to another lane")
	// ErrThreadReleased refuses to attach a lane to a Codex thread another
	// lane was bound to and let go of: its history is that conversation's.
	ErrThreadReleased = errors.New("store: the thread was another lane's")
)

// Binding is the state of a lane's Codex thread id.
type Binding string

// Binding states: none (no thread), pending (thread started or resumed, no
// completed turn on it yet), confirmed (a turn completed on it), lost
// (resume refused: the thread cannot be used again). As in the agreed
// contract, only BindingNone is typed; the others are untyped constants,
// usable both as Binding and as string.
const (
	//lint:ignore SA9004 the untyped constants are the contract (see above)
	BindingNone      Binding = ""
	BindingPending           = "pending"
	BindingConfirmed         = "confirmed"
	BindingLost              = "lost"
)

// LaneKey identifies a lane and where it lives. UserID is set only for
// per-user lanes in shared channels.
type LaneKey struct {
	SessionKey, Platform, Kind, ChatID, TopicID, UserID string
}

// Lane is one gateway_routing row joined with its current session.
type Lane struct {
	SessionKey, Platform, Kind, ChatID, TopicID, UserID string
	SessionID                                           int64
	ThreadID                                            string
	Binding                                             Binding
	Generation                                          int64
	CreatedAt, UpdatedAt, LastActiveAt                  time.Time
	SessionStartedAt                                    time.Time
	Turns                                               int64 // turns committed in the current session
	Meta                                                map[string]string
	// Project names the configured working directory the lane chose with
	// /project; "" means codex.cwd. Kept across /new, rotation and restarts.
	Project string
	// Verbose, Model and Effort are the lane's own settings (/verbose,
	// /model, /effort); "" means the configured default. Kept like Project.
	Verbose, Model, Effort string
	// Mode is the lane's collaboration mode (/plan): "plan", "default"
	// after /plan off, "" when never chosen. Kept like Verbose.
	Mode string
	// Timezone is the lane's IANA time zone for its schedules (/tz); ""
	// is lanes.timezone.
	Timezone string
}

// Message is one transcript row.
type Message struct {
	ID, SessionID                                     int64
	SessionKey, Role, Text, TurnID, PlatformMessageID string
	CreatedAt                                         time.Time
}

// Inbound is a platform message as received.
type Inbound struct {
	Platform, MessageID, SessionKey, SenderID, SenderName, Text string
	ReceivedAt                                                  time.Time
	// Attachments are the message's files, already on disk.
	Attachments []Attachment
	// Lane, when set (its SessionKey equal to SessionKey), is created or
	// marked active in the same transaction as the row, so accepting a
	// message waits for one commit instead of two (EnsureLane, then this).
	Lane LaneKey
	// LaneTitle, with Lane, names the lane (meta "title") in the same
	// transaction when it has no title yet; a title once set is kept.
	LaneTitle string
	// Origin says what started a row no one typed: a schedule's firing
	// ("⏰ every day 09:00"), a webhook ("🪝 github"); "" for messages.
	Origin string
	// ReplyTo is the platform id of the message this one replied to, and
	// SenderAdmin the platform's word that its sender administers the
	// place: what the node running the lane needs to take the message
	// as an answer to Codex's question.
	ReplyTo     string
	SenderAdmin bool
}

// Attachment is one stored file of an inbound message.
type Attachment struct {
	Path    string `json:"path"` // absolute
	Name    string `json:"name"`
	MIME    string `json:"mime"`
	Size    int64  `json:"size"`
	IsImage bool   `json:"image,omitempty"`
}

// InboundRow is a stored inbound message with its processing state.
type InboundRow struct {
	ID int64
	Inbound
	State string
}

// Inbound states accepted by SetInboundState.
const (
	InboundReceived   = "received"
	InboundProcessing = "processing"
	InboundDone       = "done"
	InboundFailed     = "failed"
	InboundIgnored    = "ignored"
)

// JournalEntry is the turn in flight on a lane.
type JournalEntry struct {
	SessionKey             string
	Generation             int64
	InboundID              int64
	ThreadID, TurnID, Text string
	StartedAt              time.Time
	// CutOff: a restart found the turn unfinished and told its lane
	// (MarkCutOff, which also made it the lane's RetryTurn); the entry
	// stays until the lane's next turn journals itself.
	CutOff bool
}

// RetryTurn is what /retry runs again: the lane's newest turn cut off by a
// restart (MarkCutOff) or stopped by the turn timeout (CommitTurn with
// Retryable). One per lane: a newer one replaces it. It stays, across
// restarts and later turns, until a rerun of it is committed (CommitTurn
// with Retries) or the lane is reset; RetryTurn returns it only while not
// yet retried and at the lane's generation.
type RetryTurn struct {
	SessionKey string
	Generation int64
	InboundID  int64  // the message's inbound row (0 when unknown)
	Text       string // what the turn sent to codex
	Reason     string // RetryCutOff or RetryTimedOut
	At         time.Time
}

// Reasons a turn can be retried.
const (
	RetryCutOff   = "cut_off"
	RetryTimedOut = "timed_out"
)

// CompletedTurn is everything CommitTurn records for one finished turn.
type CompletedTurn struct {
	SessionKey                                     string
	Generation, SessionID                          int64 // SessionID 0: the session of that generation
	ThreadID, TurnID                               string
	InboundID                                      int64
	UserText, UserMessageID, AssistantText, Status string
	Confirm                                        bool
	Reply                                          *OutboxMessage
	Usage                                          UsageRecord
	// Steered are messages added to the running turn with turn/steer. Each
	// becomes its own user row of the turn (turn id TurnID+"#steer<n>", so
	// UNIQUE(session_key, turn_id, role) keeps a second commit a no-op) and
	// its inbound row is marked done. Addition to the contract.
	Steered []SteeredInput
	// Files are the files the agent sent during the turn (OutboxFile rows),
	// enqueued in the same transaction as the reply and before it, so a
	// platform that answers a request once (the API lane) carries them
	// in its answer. Addition to the contract.
	Files []OutboxMessage
	// Retryable: the turn timed out, so it becomes the lane's RetryTurn
	// (unless the commit is stale). Retries: the turn reran that RetryTurn,
	// which the commit marks retried, so /retry does not run it again.
	// Additions to the contract.
	Retryable bool
	Retries   *RetryTurn
	// RolloutThread is the thread whose codex rollout holds the turn: its
	// ThreadID when codex started the turn, "" when it never did (the turn
	// id is the gateway's own). Recorded on the turn's rows, so a cluster
	// node taking the lane over can tell whether the rollout it restores
	// covers the lane's committed turns. Addition to the contract.
	RolloutThread string
}

// SteeredInput is one message steered into a running turn.
type SteeredInput struct {
	Text, MessageID string
	InboundID       int64
}

// SteerTurnID is the turn id under which the n-th (1-based) steered message
// of turn turnID is stored.
func SteerTurnID(turnID string, n int) string { return fmt.Sprintf("%s#steer%d", turnID, n) }

// UsageRecord is the token usage reported at the end of a turn.
// TotalTokens is the thread's running total, ContextWindow the model's
// window; the rest (migration 11) are the turn's own: what it spent by
// kind (TurnTokens in all) and the context in use after it.
type UsageRecord struct {
	TotalTokens, ContextWindow                                                int64
	TurnTokens, InputTokens, CachedInputTokens, OutputTokens, ReasoningTokens int64
	ContextTokens                                                             int64
}

// CommitResult says what CommitTurn did.
type CommitResult struct {
	Confirmed, Duplicate, Stale bool
	OutboxID                    int64
}

// Outbox states.
const (
	OutboxPending = "pending"
	OutboxSent    = "sent"
	OutboxFailed  = "failed"
)

// Outbox kinds (OutboxMessage.OutKind): what a row is, as the gateway
// labels it to the platform.
const (
	OutboxNotice = "notice" // a gateway notice; also what "" means
	OutboxReply  = "reply"  // an agent reply; ThreadID, TurnID, TurnStatus name its turn
	// OutboxFile is a file the agent sent (FilePath, FileName, FileMIME,
	// FileSize; Text is its caption), committed with its turn.
	OutboxFile = "file"
)

// OutboxMessage is a reply waiting to be (or already) delivered. Kind is
// the lane's kind (dm, channel, ...); OutKind is what the message is.
type OutboxMessage struct {
	ID                                                                         int64
	SessionKey, Platform, Kind, ChatID, TopicID, UserID, Text, ReplyTo, EditID string
	OutKind                                                                    string
	ThreadID, TurnID, TurnStatus                                               string
	State                                                                      string
	Attempts                                                                   int
	NextAttemptAt                                                              time.Time
	PlatformMessageID, LastError                                               string
	CreatedAt                                                                  time.Time
	// SentParts are the platform message ids of the parts the platform
	// already accepted (RecordPart), part 0 first; filled by DueOutbox.
	SentParts []string
	// The file of an OutboxFile row: the snapshot's path, the name it is
	// sent under, its media type and size.
	FilePath, FileName, FileMIME string
	FileSize                     int64
	// ForkLane is the session key of the lane /fork made, on its answer
	// (the fork's thread is ThreadID).
	ForkLane string
	// Ping is the platform user id the message notifies (a long turn's
	// answer to its requester, lanes.notify_after); "" for none.
	Ping string
}

// toDB stores times as Unix nanoseconds; the zero time is stored as 0 so it
// round-trips (time.Time{}.UnixNano() is out of range).
func toDB(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromDB(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
