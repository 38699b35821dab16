package gateway

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
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

// streamer shows a running turn on its platform: the typing indicator
// (where the platform has one), refreshed every TypingInterval, and a
// preview of the reply, edited at most once per PreviewInterval. All
// platform calls happen on the streamer's own goroutine, so codex's event
// delivery never waits for a platform.
type streamer struct {
	p       *presenter
	addr    Address
	replyTo string
	plat    Platform // nil: the lane's platform is not running, nothing is shown
	ty      Typer    // nil: the platform shows no typing

	mu    sync.Mutex
	text  strings.Builder
	dirty bool
	// held stops the preview where it is: the turn sent a file, which is
	// delivered with the reply, so streaming more of the reply now would
	// show it above the file.
	held bool

	// owned by the streamer goroutine until stop returns
	previewID  string
	lastEdit   time.Time
	lastTyping time.Time

	quit chan struct{}
	done chan struct{}
}

// newStreamer starts a turn's typing and streamed preview. typedAt is when
// typing was already shown while the turn waited for its slot (zero: it
// did not wait): the first refresh is due a TypingInterval after that, not
// at once, so a short wait costs one Bot API call per message, not two.
func (p *presenter) newStreamer(addr Address, replyTo string, typedAt time.Time) *streamer {
	s := &streamer{p: p, addr: addr, replyTo: replyTo, quit: make(chan struct{}), done: make(chan struct{}),
		lastTyping: typedAt}
	s.plat = p.platforms[addr.Platform]
	if s.plat == nil {
		close(s.done)
		return s
	}
	s.ty, _ = s.plat.(Typer)
	go s.loop()
	return s
}

// delta appends streamed text; it never blocks on the platform.
func (s *streamer) delta(d string) {
	if s.plat == nil {
		return
	}
	s.mu.Lock()
	s.text.WriteString(d)
	s.dirty = true
	s.mu.Unlock()
}

// hold freezes the preview (see streamer.held); typing goes on.
func (s *streamer) hold() {
	s.mu.Lock()
	s.held = true
	s.mu.Unlock()
}

// stop ends the streamer and returns the preview's message id.
func (s *streamer) stop() string {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
	return s.previewID
}

func (s *streamer) loop() {
	defer close(s.done)
	every := min(s.p.previewInterval, s.p.typingInterval) / 4
	tick, stopTick := s.p.newTicker(max(every, 10*time.Millisecond))
	defer stopTick()
	ctx, cancel := context.WithCancel(s.p.base)
	defer cancel()
	go func() {
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	s.tick(ctx, s.p.now())
	for {
		select {
		case <-s.quit:
			return
		case <-tick:
			s.tick(ctx, s.p.now())
		}
	}
}

// tick refreshes typing and pushes the preview when they are due.
func (s *streamer) tick(ctx context.Context, now time.Time) {
	if s.ty != nil && (s.lastTyping.IsZero() || now.Sub(s.lastTyping) >= s.p.typingInterval) {
		s.lastTyping = now
		if err := s.ty.Typing(ctx, s.addr); err != nil && ctx.Err() == nil {
			s.p.obs.PlatformError(s.addr.Platform, "typing")
			s.p.log.Debug("typing.failed", zap.String("platform", s.addr.Platform), zap.Error(err))
		}
	}
	if !s.lastEdit.IsZero() && now.Sub(s.lastEdit) < s.p.previewInterval {
		return
	}
	s.mu.Lock()
	if !s.dirty || s.held {
		s.mu.Unlock()
		return
	}
	text := s.text.String()
	s.dirty = false
	s.mu.Unlock()
	if strings.TrimSpace(text) == "" {
		return
	}
	s.lastEdit = now
	s.push(ctx, text)
}

func (s *streamer) push(ctx context.Context, text string) {
	if !s.p.servesLane(s.addr.SessionKey()) {
		return // the lane moved to another node
	}
	preview := text
	if s.previewID == "" {
		id, err := s.plat.Send(ctx, Outbound{Address: s.addr, Kind: OutPreview, Text: preview,
			ReplyTo: s.replyTo, InReplyTo: s.replyTo})
		if err != nil {
			s.p.obs.PlatformError(s.addr.Platform, "preview")
			s.p.log.Debug("preview.send_failed", zap.String("platform", s.addr.Platform), zap.Error(err))
			return
		}
		s.previewID = id
		return
	}
	if err := s.plat.Edit(ctx, s.addr, s.previewID, preview); err != nil {
		s.p.obs.PlatformError(s.addr.Platform, "edit")
		s.p.log.Debug("preview.edit_failed", zap.String("platform", s.addr.Platform), zap.Error(err))
	}
}
