package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/feature/models"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// testModels is what the model-listing fake codex offers: alpha is codex's
// default and supports medium and high, beta low and xhigh.
var testModels = []codex.Model{
	{ID: "alpha", Name: "alpha", DisplayName: "Alpha", DefaultEffort: "medium", Efforts: []string{"medium", "high"}, IsDefault: true},
	{ID: "beta", Name: "beta", DisplayName: "Beta", DefaultEffort: "low", Efforts: []string{"low", "xhigh"}},
}

// modelCodex is the fake codex plus model/list and config/read, recording
// the model and effort of every turn.
type modelCodex struct {
	*fakeCodex
	mu       sync.Mutex
	defaults codex.ModelDefaults
	inputs   []codex.TurnInput
}

func (c *modelCodex) ListModels(context.Context) ([]codex.Model, error) {
	return testModels, nil
}

func (c *modelCodex) ModelDefaults(context.Context) (codex.ModelDefaults, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.defaults, nil
}

func (c *modelCodex) RunTurn(ctx context.Context, thread string, in codex.TurnInput, ev codex.TurnEvents) (codex.TurnResult, error) {
	c.mu.Lock()
	c.inputs = append(c.inputs, in)
	c.mu.Unlock()
	return c.fakeCodex.RunTurn(ctx, thread, in, ev)
}

// lastTurn is the model and effort of the latest turn.
func (c *modelCodex) lastTurn(t *testing.T) (model, effort string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.inputs) == 0 {
		t.Fatal("no turn ran")
	}
	in := c.inputs[len(c.inputs)-1]
	return in.Model, in.Effort
}

// The tests of the models feature through the whole gateway; those of
// its cache are in gateway/feature/models.

// newModelHarness is newHarness over a codex that lists testModels and
// reports codex's default model as alpha, with the models feature.
func newModelHarness(t *testing.T) (*harness, *modelCodex) {
	t.Helper()
	return newModelHarnessWith(t, "", "")
}

// newModelHarnessWith is newModelHarness with codex.model and
// codex.effort configured.
func newModelHarnessWith(t *testing.T, model, effort string) (*harness, *modelCodex) {
	t.Helper()
	h := &harness{st: newFakeStore(), cx: newFakeCodex(), p: newFakePlatform(), clock: newFakeClock()}
	h.st.now = h.clock.Now
	mc := &modelCodex{fakeCodex: h.cx, defaults: codex.ModelDefaults{Model: "alpha"}}
	cfg := Config{MaxLive: 16, QueueLimit: 10, MaxConcurrentTurns: 4, DrainTimeout: 2 * time.Second,
		Logger: zaptest.NewLogger(t), Now: h.clock.Now}
	cfg.Thread.Model = model
	cfg.Features = []ext.Feature{models.New(model, effort, h.st, mc)}
	g, err := New(cfg.WithDefaults(), h.st, mc)
	if err != nil {
		t.Fatal(err)
	}
	g.AddPlatform(h.p)
	h.g = g
	return h, mc
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s answered %q, want it to contain %q", what, got, want)
		}
	}
}

func TestModelShowsTheLanesModelAndTheListWithButtons(t *testing.T) {
	h, _ := newModelHarness(t)
	bp := &buttonPlatform{fakePlatform: h.p, buttons: make(chan []Button, 4)}
	h.g.AddPlatform(bp)
	h.start(t)
	got := h.ask(t, "q1", "/model")
	wantContains(t, "/model", got, "Model: alpha (default)", "Effort: medium (default)",
		"• alpha — Alpha (efforts: medium, high)", "• beta — Beta (efforts: low, xhigh)", "/model NAME")
	var ids []string
	for _, b := range <-bp.buttons {
		ids = append(ids, b.ID+"="+b.Label)
	}
	if got, want := strings.Join(ids, " "), "model:alpha=alpha model:beta=beta"; got != want {
		t.Errorf("buttons %q, want %q", got, want)
	}
}

func TestModelSetsAndRefuses(t *testing.T) {
	tests := []struct {
		name, command string
		want          string
		wantModel     string // stored afterwards; the lane starts with alpha
	}{
		{"by id", "/model beta", "Model: beta. The next turn uses it", "beta"},
		{"ignoring case", "/model BETA", "Model: beta.", "beta"},
		{"by display name", "/model Beta", "Model: beta.", "beta"},
		{"an unknown model is refused with the valid ones", "/model gpt-nope",
			`Unknown model "gpt-nope". Choose one of: alpha, beta (or default). Nothing changed.`, "alpha"},
		{"default clears it", "/model default", "Model: the default (alpha) from the next turn.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newModelHarness(t)
			h.start(t)
			h.ask(t, "q0", "/model alpha")
			if got := h.ask(t, "q1", tt.command); !strings.Contains(got, tt.want) {
				t.Errorf("%s answered %q, want %q", tt.command, got, tt.want)
			}
			if got := h.st.lane(laneA).Model; got != tt.wantModel {
				t.Errorf("stored model %q, want %q", got, tt.wantModel)
			}
		})
	}
}

func TestEffortSetsAndRefuses(t *testing.T) {
	tests := []struct {
		name, command string
		want          string
		wantEffort    string // stored afterwards; the lane starts on alpha with medium
	}{
		{"a supported level", "/effort high", "Effort: high. The next turn uses it.", "high"},
		{"ignoring case", "/effort HIGH", "Effort: high.", "high"},
		{"a level the model lacks is refused with the valid ones", "/effort xhigh",
			`The model alpha does not support the effort "xhigh". Choose one of: medium, high (or default). Nothing changed.`, "medium"},
		{"nonsense is refused", "/effort lots", `does not support the effort "lots"`, "medium"},
		{"default clears it", "/effort default", "Effort: the model's default from the next turn.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newModelHarness(t)
			h.start(t)
			h.ask(t, "q0", "/model alpha")
			h.ask(t, "q1", "/effort medium")
			if got := h.ask(t, "q2", tt.command); !strings.Contains(got, tt.want) {
				t.Errorf("%s answered %q, want %q", tt.command, got, tt.want)
			}
			if got := h.st.lane(laneA).Effort; got != tt.wantEffort {
				t.Errorf("stored effort %q, want %q", got, tt.wantEffort)
			}
		})
	}
}

func TestEffortListsTheLevelsOfTheLanesModel(t *testing.T) {
	h, _ := newModelHarness(t)
	bp := &buttonPlatform{fakePlatform: h.p, buttons: make(chan []Button, 4)}
	h.g.AddPlatform(bp)
	h.start(t)
	h.ask(t, "q0", "/model beta")
	got := h.ask(t, "q1", "/effort")
	wantContains(t, "/effort", got, "Model: beta", "Effort: low (default)", "Efforts: low, xhigh")
	var ids []string
	for _, b := range <-bp.buttons {
		ids = append(ids, b.ID)
	}
	if got, want := strings.Join(ids, " "), "effort:low effort:xhigh"; got != want {
		t.Errorf("buttons %q, want %q", got, want)
	}
}

// A model that does not support the lane's effort takes the effort with
// it; one that does keeps it, and so does going back to a default model
// that supports it.
func TestModelSwitchKeepsOnlyASupportedEffort(t *testing.T) {
	h, _ := newModelHarness(t)
	h.start(t)
	h.ask(t, "q0", "/model alpha")
	h.ask(t, "q1", "/effort high")
	got := h.ask(t, "q2", "/model beta")
	wantContains(t, "/model beta", got, "It does not support the effort high, so the effort is back to its default (low).")
	if l := h.st.lane(laneA); l.Model != "beta" || l.Effort != "" {
		t.Errorf("stored model %q effort %q, want beta and none", l.Model, l.Effort)
	}
	h.ask(t, "q3", "/model alpha")
	h.ask(t, "q4", "/effort high")
	if got := h.ask(t, "q5", "/model default"); strings.Contains(got, "does not support") {
		t.Errorf("/model default answered %q: the default alpha supports high", got)
	}
	if l := h.st.lane(laneA); l.Model != "" || l.Effort != "high" {
		t.Errorf("stored model %q effort %q, want none and high", l.Model, l.Effort)
	}
}

// Every turn names the lane's model and effort, or the defaults once the
// lane goes back to them (codex keeps a turn's choice for the thread).
func TestTurnsCarryTheLanesModelAndEffort(t *testing.T) {
	h, mc := newModelHarness(t)
	h.start(t)
	h.ask(t, "m1", "hello")
	if model, effort := mc.lastTurn(t); model != "alpha" || effort != "medium" {
		t.Errorf("first turn: model %q effort %q, want codex's default alpha and its default medium", model, effort)
	}
	h.ask(t, "q1", "/model beta")
	h.ask(t, "q2", "/effort xhigh")
	h.ask(t, "m2", "again")
	if model, effort := mc.lastTurn(t); model != "beta" || effort != "xhigh" {
		t.Errorf("turn after /model beta /effort xhigh: model %q effort %q", model, effort)
	}
	h.ask(t, "n1", "/new")
	h.ask(t, "m3", "fresh")
	if model, effort := mc.lastTurn(t); model != "beta" || effort != "xhigh" {
		t.Errorf("turn after /new: model %q effort %q, want the lane's beta and xhigh kept", model, effort)
	}
	h.ask(t, "q3", "/model default")
	h.ask(t, "q4", "/effort default")
	h.ask(t, "m4", "back")
	if model, effort := mc.lastTurn(t); model != "alpha" || effort != "medium" {
		t.Errorf("turn after the defaults: model %q effort %q, want alpha and medium named", model, effort)
	}
}

func TestConfiguredDefaultsComeBeforeCodexs(t *testing.T) {
	h, mc := newModelHarnessWith(t, "beta", "xhigh")
	h.start(t)
	h.ask(t, "m1", "hello")
	if model, effort := mc.lastTurn(t); model != "beta" || effort != "xhigh" {
		t.Errorf("turn: model %q effort %q, want codex.model beta and codex.effort xhigh", model, effort)
	}
	wantContains(t, "/status", h.ask(t, "s1", "/status"), "Model: default (beta), effort default (xhigh)")
	h.ask(t, "q1", "/model alpha")
	wantContains(t, "/status", h.ask(t, "s2", "/status"), "Model: alpha, effort default (xhigh)")
}

func TestModelAndEffortButtons(t *testing.T) {
	h, _ := newModelHarness(t)
	h.start(t)
	for i, press := range []string{"model:beta", "effort:xhigh"} {
		in := Inbound{Address: apiAddr("a"), MessageID: "cb" + string(rune('1'+i)), SenderID: "u1", Callback: press}
		if _, err := h.g.Deliver(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		h.p.next(t)
	}
	if l := h.st.lane(laneA); l.Model != "beta" || l.Effort != "xhigh" {
		t.Errorf("after the buttons: model %q effort %q, want beta and xhigh", l.Model, l.Effort)
	}
}

// A codex without model/list (an older app-server: the plain fake answers
// method not found) sends no model or effort of its own and answers
// /model with the reason.
func TestWithoutAModelListNothingIsNamed(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.ask(t, "m1", "hello")
	wantContains(t, "/model", h.ask(t, "q1", "/model"), "Model: codex's own (default)", "Could not list Codex's models")
	if l := h.st.lane(laneA); l.Model != "" {
		t.Errorf("stored model %q, want none", l.Model)
	}
}

// A lane on a model codex does not list (a custom provider's, here codex's
// configured default) may choose any effort a listed model supports.
func TestEffortOfAnUnlistedModelIsCheckedAgainstEveryListedEffort(t *testing.T) {
	h, mc := newModelHarness(t)
	mc.defaults = codex.ModelDefaults{Model: "custom-model"}
	h.start(t)
	wantContains(t, "/effort xhigh", h.ask(t, "q1", "/effort xhigh"), "Effort: xhigh.")
	wantContains(t, "/effort ultra", h.ask(t, "q2", "/effort ultra"),
		`The model custom-model does not support the effort "ultra". Choose one of: medium, high, low, xhigh (or default).`)
	if l := h.st.lane(laneA); l.Effort != "xhigh" {
		t.Errorf("stored effort %q, want xhigh (the refused ultra not stored)", l.Effort)
	}
	h.ask(t, "m1", "hello")
	if model, effort := mc.lastTurn(t); model != "custom-model" || effort != "xhigh" {
		t.Errorf("turn: model %q effort %q, want custom-model and xhigh", model, effort)
	}
}
