// Package gateway routes platform messages to per-lane Codex agents.
//
// This file keeps, under the gateway's names, the platform-neutral
// vocabulary every adapter speaks: it lives in package chat (the address
// of a lane, inbound and outbound messages, the Platform interface and its
// optional capabilities) and package outbox (what a send may answer), so
// features and adapters share it without importing the core.
package gateway

import (
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/outbox"
)

type (
	LaneKind         = chat.LaneKind
	Address          = chat.Address
	Attachment       = chat.Attachment
	Inbound          = chat.Inbound
	Quote            = chat.Quote
	SenderLimitError = chat.SenderLimitError
	Sink             = chat.Sink
	OutKind          = chat.OutKind
	SentFile         = chat.SentFile
	TurnInfo         = chat.TurnInfo
	Outbound         = chat.Outbound
	PartLog          = chat.PartLog
	ForkInfo         = chat.ForkInfo
	Button           = chat.Button
	Platform         = chat.Platform
	Deleter          = chat.Deleter
	Renamer          = chat.Renamer
	Typer            = chat.Typer
	ButtonSender     = chat.ButtonSender
	ButtonEditor     = chat.ButtonEditor
	Authorizer       = chat.Authorizer
	MakerAuthorizer  = chat.MakerAuthorizer
	ProgressEditor   = chat.ProgressEditor
	// EveryMessageAnswered: see chat.EveryMessageAnswered.
	EveryMessageAnswered = chat.EveryMessageAnswered
	// A turn's status message as platforms see it: the view the work view
	// (feature/workview) shows, structured for the platforms that take it.
	WorkView   = chat.WorkView
	WorkAction = chat.WorkAction
	// RetryAfterError is returned by Send and Edit when the platform asks
	// us to slow down; the outbox retries after the given delay.
	RetryAfterError = outbox.RetryAfterError
)

const (
	LaneDM      = chat.LaneDM
	LaneGroup   = chat.LaneGroup
	LaneChannel = chat.LaneChannel
	LaneThread  = chat.LaneThread
	LaneTopic   = chat.LaneTopic
	LaneAPI     = chat.LaneAPI
	LaneRoom    = chat.LaneRoom

	OutReply    = chat.OutReply
	OutNotice   = chat.OutNotice
	OutPreview  = chat.OutPreview
	OutFile     = chat.OutFile
	OutProgress = chat.OutProgress

	// Work action kinds (WorkAction.Kind).
	WorkCommand  = chat.WorkCommand
	WorkFileEdit = chat.WorkFileEdit

	SessionKeyVersion = chat.SessionKeyVersion
)

var (
	ErrNoPlace      = chat.ErrNoPlace
	ErrCannotRename = chat.ErrCannotRename
	// ErrDeferred: the platform took the message but nobody has received
	// it yet; the outbox holds the row until the platform reports it
	// (the API lane through its Config.Deliveries).
	ErrDeferred = outbox.ErrDeferred
	// ErrPermanent marks a send failure that retrying cannot fix (chat not
	// found, thread deleted, forbidden). Wrap it: fmt.Errorf("...: %w",
	// ErrPermanent).
	ErrPermanent = outbox.ErrPermanent
)
