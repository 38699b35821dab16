// Package preview shows a running turn on its platform: the typing
// indicator, refreshed every TypingInterval, and a preview of the reply,
// edited at most once per PreviewInterval. It knows addresses and
// message ids, nothing of lanes or turns; the core adapts its platforms
// to the small interfaces below.
package preview

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
)

// Platform is where a preview is shown.
type Platform interface {
	// Post sends the preview's first version, replying to replyTo, and
	// returns its message id.
	Post(ctx context.Context, addr chat.Address, replyTo, text string) (messageID string, err error)
	// Edit replaces the preview's text.
	Edit(ctx context.Context, addr chat.Address, messageID, text string) error
}

// Typer shows a typing indicator for a few seconds.
type Typer interface {
	Typing(ctx context.Context, addr chat.Address) error
}

// Observer counts the platform calls that failed (the gateway's Observer
// implements it).
type Observer interface {
	PlatformError(platform, op string)
}

// Config is what a gateway's streamers share.
type Config struct {
	// Base is the context of their platform calls: it outlives intake
	// until the drain is over.
	Base            context.Context
	PreviewInterval time.Duration
	TypingInterval  time.Duration
	// Ticker starts the streamer's ticker.
	Ticker func(d time.Duration) (<-chan time.Time, func())
	// Serves, in cluster mode, says which lanes this node may still show
	// previews for; nil serves every lane.
	Serves func(sessionKey string) bool
	Obs    Observer
	Log    *zap.Logger
	Now    func() time.Time
}

// Streamer shows one running turn. All platform calls happen on its own
// goroutine, so codex's event delivery never waits for a platform.
type Streamer struct {
	c       Config
	addr    chat.Address
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

	// owned by the streamer goroutine until Stop returns
	previewID  string
	lastEdit   time.Time
	lastTyping time.Time

	quit chan struct{}
	done chan struct{}
}

// Start starts a turn's typing and streamed preview on plat (nil: nothing
// is shown) and ty (nil: no typing). typedAt is when typing was already
// shown while the turn waited for its slot (zero: it did not wait): the
// first refresh is due a TypingInterval after that, not at once, so a
// short wait costs one Bot API call per message, not two.
func Start(c Config, plat Platform, ty Typer, addr chat.Address, replyTo string, typedAt time.Time) *Streamer {
	s := &Streamer{c: c, addr: addr, replyTo: replyTo, plat: plat, ty: ty,
		quit: make(chan struct{}), done: make(chan struct{}), lastTyping: typedAt}
	if plat == nil {
		close(s.done)
		return s
	}
	go s.loop()
	return s
}

// Delta appends streamed text; it never blocks on the platform.
func (s *Streamer) Delta(d string) {
	if s.plat == nil {
		return
	}
	s.mu.Lock()
	s.text.WriteString(d)
	s.dirty = true
	s.mu.Unlock()
}

// Hold freezes the preview (see Streamer.held); typing goes on.
func (s *Streamer) Hold() {
	s.mu.Lock()
	s.held = true
	s.mu.Unlock()
}

// Stop ends the streamer and returns the preview's message id.
func (s *Streamer) Stop() string {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
	return s.previewID
}

func (s *Streamer) loop() {
	defer close(s.done)
	every := min(s.c.PreviewInterval, s.c.TypingInterval) / 4
	tick, stopTick := s.c.Ticker(max(every, 10*time.Millisecond))
	defer stopTick()
	ctx, cancel := context.WithCancel(s.c.Base)
	defer cancel()
	go func() {
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	s.tick(ctx, s.c.Now())
	for {
		select {
		case <-s.quit:
			return
		case <-tick:
			s.tick(ctx, s.c.Now())
		}
	}
}

// tick refreshes typing and pushes the preview when they are due.
func (s *Streamer) tick(ctx context.Context, now time.Time) {
	if s.ty != nil && (s.lastTyping.IsZero() || now.Sub(s.lastTyping) >= s.c.TypingInterval) {
		s.lastTyping = now
		if err := s.ty.Typing(ctx, s.addr); err != nil && ctx.Err() == nil {
			s.c.Obs.PlatformError(s.addr.Platform, "typing")
			s.c.Log.Debug("typing.failed", zap.String("platform", s.addr.Platform), zap.Error(err))
		}
	}
	if !s.lastEdit.IsZero() && now.Sub(s.lastEdit) < s.c.PreviewInterval {
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

func (s *Streamer) push(ctx context.Context, text string) {
	if s.c.Serves != nil && !s.c.Serves(s.addr.SessionKey()) {
		return // the lane moved to another node
	}
	if s.previewID == "" {
		id, err := s.plat.Post(ctx, s.addr, s.replyTo, text)
		if err != nil {
			s.c.Obs.PlatformError(s.addr.Platform, "preview")
			s.c.Log.Debug("preview.send_failed", zap.String("platform", s.addr.Platform), zap.Error(err))
			return
		}
		s.previewID = id
		return
	}
	if err := s.plat.Edit(ctx, s.addr, s.previewID, text); err != nil {
		s.c.Obs.PlatformError(s.addr.Platform, "edit")
		s.c.Log.Debug("preview.edit_failed", zap.String("platform", s.addr.Platform), zap.Error(err))
	}
}
