package store

import (
	"context"
	"time"
)

// The exported API agreed with the gateway and daemon helpers; this file
// stops compiling if a signature drifts from the contract.
var (
	_ func(context.Context, string, Options) (*Store, error)                   = Open
	_ func(*Store) error                                                       = (*Store).Close
	_ func(*Store, context.Context) error                                      = (*Store).Ping
	_ func(*Store, context.Context, string) (Lane, error)                      = (*Store).Lane
	_ func(*Store, context.Context, int) ([]Lane, error)                       = (*Store).Lanes
	_ func(*Store, context.Context, string, int) ([]Message, error)            = (*Store).Transcript
	_ func(*Store, context.Context, string, int) ([]Message, error)            = (*Store).Search
	_ func(*Store, context.Context, LaneKey) (Lane, error)                     = (*Store).EnsureLane
	_ func(*Store, context.Context, string, int64, string) error               = (*Store).BindThread
	_ func(*Store, context.Context, string, int64, string, string) error       = (*Store).MarkBindingLost
	_ func(*Store, context.Context, string, string) (Lane, error)              = (*Store).ResetLane
	_ func(*Store, context.Context, string, int64, string, bool) (Lane, error) = (*Store).RotateSession
	_ func(*Store, context.Context, Inbound) (int64, bool, error)              = (*Store).RecordInbound
	_ func(*Store, context.Context, int64, string) error                       = (*Store).SetInboundState
	_ func(*Store, context.Context) ([]InboundRow, error)                      = (*Store).PendingInbound
	_ func(*Store, context.Context, string) (string, bool, error)              = (*Store).Cursor
	_ func(*Store, context.Context, string, string) error                      = (*Store).SetCursor
	_ func(*Store, context.Context, JournalEntry) error                        = (*Store).JournalTurn
	_ func(*Store, context.Context, string) error                              = (*Store).ClearJournal
	_ func(*Store, context.Context) ([]JournalEntry, error)                    = (*Store).Journal
	_ func(*Store, context.Context, CompletedTurn) (CommitResult, error)       = (*Store).CommitTurn
	_ func(*Store, context.Context, OutboxMessage) (int64, error)              = (*Store).Enqueue
	_ func(*Store, context.Context, time.Time, int) ([]OutboxMessage, error)   = (*Store).DueOutbox
	_ func(*Store, context.Context, int64, string) error                       = (*Store).MarkSent
	_ func(*Store, context.Context, int64, time.Time, string) error            = (*Store).MarkRetry
	_ func(*Store, context.Context, int64, string) error                       = (*Store).MarkFailed
	_ func(*Store, context.Context, string, string, int64, int64) error        = (*Store).RecordCompaction
	_ func(*Store) int                                                         = (*Store).QueueDepth
	_                                                                          = InboundRow{Inbound: Inbound{}}
	_ Binding                                                                  = BindingPending
	_ string                                                                   = BindingConfirmed
	_ []error                                                                  = []error{ErrStaleGeneration, ErrNotFound, ErrLocked, ErrClosed}
	_ UsageRecord                                                              = CompletedTurn{}.Usage
)
