package gateway

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/preview"
)

// presenter makes what a running turn shows on its platform: the streamer
// (typing and the preview). It holds exactly what that needs, so it does
// not reach into the Gateway.
type presenter struct {
	platforms map[string]Platform
	// base is the context of their platform calls: it outlives intake
	// until the drain is over.
	base            context.Context
	previewInterval time.Duration
	typingInterval  time.Duration
	// serves, in cluster mode, says which lanes this node may still show
	// previews for (set by SetLaneGate); nil serves every lane.
	serves func(sessionKey string) bool
	// ticker points at the Gateway's ticker func, read when a streamer
	// starts, so a test that swaps the Gateway's after New drives it too.
	ticker *tickerFunc
	obs    Observer
	log    *zap.Logger
	now    func() time.Time
}

// servesLane is serves, true without a gate.
func (p *presenter) servesLane(sessionKey string) bool {
	return p.serves == nil || p.serves(sessionKey)
}

// newTicker starts a ticker with the current ticker func.
func (p *presenter) newTicker(d time.Duration) (<-chan time.Time, func()) { return (*p.ticker)(d) }

// streamer shows a running turn's typing and streamed preview (package
// preview); the name is the core's.
type streamer = preview.Streamer

// newStreamer starts a turn's typing and streamed preview on its lane's
// platform (preview.Start). typedAt is when typing was already shown while
// the turn waited for its slot (zero: it did not wait).
func (p *presenter) newStreamer(addr Address, replyTo string, typedAt time.Time) *streamer {
	c := preview.Config{Base: p.base, PreviewInterval: p.previewInterval, TypingInterval: p.typingInterval,
		Ticker: p.newTicker, Serves: p.servesLane, Obs: p.obs, Log: p.log, Now: p.now}
	plat, ok := p.platforms[addr.Platform]
	if !ok {
		return preview.Start(c, nil, nil, addr, replyTo, typedAt)
	}
	ty, _ := plat.(Typer)
	return preview.Start(c, previewPoster{plat}, ty, addr, replyTo, typedAt)
}

// previewPoster posts a preview as the platform's OutPreview message.
type previewPoster struct{ Platform }

func (p previewPoster) Post(ctx context.Context, addr Address, replyTo, text string) (string, error) {
	return p.Send(ctx, Outbound{Address: addr, Kind: OutPreview, Text: text, ReplyTo: replyTo, InReplyTo: replyTo})
}
