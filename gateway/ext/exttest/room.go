package exttest

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// Room records ext.RoomHooks and ext.TitleHooks: the text and ambient
// hooks a feature registered, which a test runs through Text and Ambient,
// and what names lanes.
type Room struct {
	// Commands are the texts IsCommand reports as commands.
	Commands map[string]bool
	// Cluster is what Clustered reports.
	Cluster bool

	// Titler is what a feature registered to name lanes (Titles).
	Titler ext.Titler

	text    []func(ctx context.Context, in chat.Inbound, text string) string
	ambient []func(ctx context.Context, in chat.Inbound)
}

func (r *Room) Titles(t ext.Titler) { r.Titler = t }

func (r *Room) OnText(fn func(ctx context.Context, in chat.Inbound, text string) string) {
	r.text = append(r.text, fn)
}

func (r *Room) OnAmbient(fn func(ctx context.Context, in chat.Inbound)) {
	r.ambient = append(r.ambient, fn)
}

func (r *Room) IsCommand(text string) bool { return r.Commands[text] }
func (r *Room) Clustered() bool            { return r.Cluster }

// Text is in's text as the registered text hooks make it.
func (r *Room) Text(ctx context.Context, in chat.Inbound) string {
	text := in.Text
	for _, fn := range r.text {
		text = fn(ctx, in, text)
	}
	return text
}

// Ambient hands in to the registered ambient hooks.
func (r *Room) Ambient(ctx context.Context, in chat.Inbound) {
	for _, fn := range r.ambient {
		fn(ctx, in)
	}
}
