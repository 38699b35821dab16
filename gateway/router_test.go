package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

func TestSessionKey(t *testing.T) {
	tests := []struct {
		name string
		addr Address
		want string
	}{
		{"telegram private chat", Address{Platform: "telegram", Kind: LaneDM, ChatID: "42"}, "v1:telegram:dm:42"},
		{"telegram group", Address{Platform: "telegram", Kind: LaneGroup, ChatID: "-100"}, "v1:telegram:group:-100"},
		{"telegram forum topic", Address{Platform: "telegram", Kind: LaneTopic, ChatID: "-100", TopicID: "7"}, "v1:telegram:topic:-100:7"},
		{"telegram general topic", Address{Platform: "telegram", Kind: LaneTopic, ChatID: "-100", TopicID: "1"}, "v1:telegram:topic:-100:1"},
		{"discord dm", Address{Platform: "discord", Kind: LaneDM, ChatID: "555"}, "v1:discord:dm:555"},
		{"discord channel shared", Address{Platform: "discord", Kind: LaneChannel, ChatID: "9"}, "v1:discord:channel:9"},
		{"discord channel per user", Address{Platform: "discord", Kind: LaneChannel, ChatID: "9", UserID: "u3"}, "v1:discord:channel:9:user:u3"},
		{"discord thread ignores parent", Address{Platform: "discord", Kind: LaneThread, ChatID: "9", TopicID: "77"}, "v1:discord:thread:77"},
		{"api lane", Address{Platform: "api", Kind: LaneAPI, ChatID: "demo"}, "v1:api:demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.addr.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := tt.addr.SessionKey(); got != tt.want {
				t.Errorf("SessionKey() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAddressOfLaneRoundTrip(t *testing.T) {
	for _, a := range []Address{
		{Platform: "discord", Kind: LaneChannel, ChatID: "9", UserID: "u3"},
		{Platform: "telegram", Kind: LaneTopic, ChatID: "-100", TopicID: "7"},
	} {
		k := laneKey(a) // what EnsureLane stores, and Lane reads back
		got := addressOfLane(store.Lane{SessionKey: k.SessionKey, Platform: k.Platform, Kind: k.Kind,
			ChatID: k.ChatID, TopicID: k.TopicID, UserID: k.UserID})
		if got != a {
			t.Errorf("addressOfLane = %+v, want %+v", got, a)
		}
	}
}

func TestParseCommand(t *testing.T) {
	tests := []struct {
		name, text, want string
		ok               bool
	}{
		{"plain", "/new", "new", true},
		{"with bot name", "/status@gatewayd_bot", "status", true},
		{"upper case with args", "/RETRY now", "retry", true},
		{"unknown goes to codex", "/deploy prod", "", false},
		{"not a command", "hello /new", "", false},
		{"leading space", "  /help", "help", true},
	}
	cmds := newHarness(t).g.host.commands
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, _, ok := cmds.Parse(tt.text)
			if ok != tt.ok || name != tt.want {
				t.Errorf("Parse(%q) = %q,%v want %q,%v", tt.text, name, ok, tt.want, tt.ok)
			}
		})
	}
}

// gate blocks RunTurn per lane until released, so tests control ordering.
type gate struct {
	mu      sync.Mutex
	entered chan string
	release map[string]chan struct{}
}

func newGate() *gate {
	return &gate{entered: make(chan string, 64), release: map[string]chan struct{}{}}
}

func (gt *gate) ch(text string) chan struct{} {
	gt.mu.Lock()
	defer gt.mu.Unlock()
	c, ok := gt.release[text]
	if !ok {
		c = make(chan struct{})
		gt.release[text] = c
	}
	return c
}

func (gt *gate) run(ctx context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
	gt.entered <- text
	select {
	case <-gt.ch(text):
	case <-ctx.Done():
		return codex.TurnResult{}, ctx.Err()
	}
	return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
}

func (gt *gate) open(text string) { close(gt.ch(text)) }

func TestRouterKeepsLaneOrderAndRunsLanesInParallel(t *testing.T) {
	h := newHarness(t)
	gt := newGate()
	h.cx.run = gt.run
	h.start(t)
	h.send(t, "a", "a1", "a-one")
	h.send(t, "b", "b1", "b-one")
	// Both lanes' first turns run at the same time: neither is released
	// until both have entered.
	got := map[string]bool{<-gt.entered: true, <-gt.entered: true}
	if !got["a-one"] || !got["b-one"] {
		t.Fatalf("entered %v, want both lanes running", got)
	}
	h.send(t, "a", "a2", "a-two")
	h.send(t, "a", "a3", "a-three")
	if q := h.p.next(t); q.Kind != OutNotice || !strings.Contains(q.Text, "Queued") {
		t.Fatalf("want one queued notice, got %+v", q)
	}
	gt.open("b-one")
	gt.open("a-one")
	if e := <-gt.entered; e != "a-two" {
		t.Fatalf("lane a ran %q second, want a-two", e)
	}
	gt.open("a-two")
	if e := <-gt.entered; e != "a-three" {
		t.Fatalf("lane a ran %q third, want a-three", e)
	}
	gt.open("a-three")
	var replies []string
	for len(replies) < 4 {
		o := h.p.next(t)
		if strings.Contains(o.Text, "Queued") {
			t.Fatalf("second queued notice in one burst: %+v", o)
		}
		if o.Kind == OutReply && strings.HasPrefix(o.InReplyTo, "a") {
			replies = append(replies, o.Text)
		} else if o.Kind == OutReply {
			replies = append(replies, "b")
		}
	}
	var aOrder []string
	for _, r := range replies {
		if r != "b" {
			aOrder = append(aOrder, r)
		}
	}
	if want := []string{"re: a-one", "re: a-two", "re: a-three"}; fmt.Sprint(aOrder) != fmt.Sprint(want) {
		t.Errorf("lane a replies %v, want %v", aOrder, want)
	}
}

func TestRouterCapsConcurrentTurns(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxConcurrentTurns = 2 })
	var running, peak atomic.Int64
	h.cx.run = func(ctx context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		defer running.Add(-1)
		return codex.TurnResult{Status: codex.TurnCompleted, Text: text}, nil
	}
	h.start(t)
	const lanes = 12
	var wg sync.WaitGroup
	for i := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.send(t, fmt.Sprintf("l%d", i), fmt.Sprintf("m%d", i), "hi")
		}()
	}
	wg.Wait()
	for range lanes {
		h.p.next(t)
	}
	if p := peak.Load(); p > 2 {
		t.Errorf("peak concurrent turns = %d, want ≤ 2", p)
	}
}

func TestQueueOverflowRefusesWithNotice(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.QueueLimit = 1 })
	gt := newGate()
	h.cx.run = gt.run
	h.start(t)
	h.send(t, "a", "m1", "one")
	<-gt.entered
	h.send(t, "a", "m2", "two")   // queued
	h.send(t, "a", "m3", "three") // over the limit
	var refused Outbound
	for refused.InReplyTo != "m3" {
		refused = h.p.next(t)
	}
	if !strings.Contains(refused.Text, "not queued") {
		t.Errorf("overflow notice = %q", refused.Text)
	}
	if s := h.st.inboundState(3); s != store.InboundIgnored {
		t.Errorf("overflowed inbound state = %q, want ignored", s)
	}
	gt.open("one")
	gt.open("two")
	h.p.replyTo(t, "m2")
	if _, _, turns := h.cx.snapshot(); len(turns) != 2 {
		t.Errorf("turns run = %v, want 2 (the refused one never reaches codex)", turns)
	}
}

// countingObserver counts metrics events.
type countingObserver struct {
	mu     sync.Mutex
	counts map[string]int
}

func (o *countingObserver) add(k string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.counts[k]++
}

func (o *countingObserver) get(k string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[k]
}

func (o *countingObserver) Inbound(p string)                       { o.add("inbound:" + p) }
func (o *countingObserver) Duplicate(p string)                     { o.add("duplicate:" + p) }
func (o *countingObserver) TurnFinished(s string, _ time.Duration) { o.add("turn:" + s) }
func (o *countingObserver) Resume(outcome string)                  { o.add("resume:" + outcome) }
func (o *countingObserver) Outbound(p string, err error) {
	o.add(fmt.Sprintf("out:%s:%v", p, err == nil))
}
func (o *countingObserver) PlatformError(p, kind string)   { o.add("perr:" + p + ":" + kind) }
func (o *countingObserver) Tokens(p, kind string, n int64) { o.add("tokens:" + p + ":" + kind) }
func (o *countingObserver) ScheduleFired()                 { o.add("fired") }

func TestObserverHooks(t *testing.T) {
	obs := &countingObserver{counts: map[string]int{}}
	h := newHarness(t, func(c *Config) { c.Observer = obs })
	h.start(t)
	h.send(t, "a", "m1", "one")
	h.p.replyTo(t, "m1")
	h.send(t, "a", "m1", "one again") // duplicate
	h.send(t, "a", "m2", "two")
	h.p.replyTo(t, "m2")
	waitFor(t, "outbound counted", func() bool { return obs.get("out:test:true") == 2 })
	for k, want := range map[string]int{"inbound:test": 2, "duplicate:test": 1, "turn:completed": 2,
		"resume:started": 1, "resume:loaded": 1} {
		if got := obs.get(k); got != want {
			t.Errorf("%s = %d, want %d", k, got, want)
		}
	}
}
