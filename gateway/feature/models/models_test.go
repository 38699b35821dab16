package models

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// The whole-gateway tests of /model and /effort (buttons, turns across
// /new, a codex without model/list) are in gateway/models_test.go; these
// are the cache's, against the fake host.

// testModels: alpha is codex's default and supports medium and high, beta
// low and xhigh.
var testModels = []codex.Model{
	{ID: "alpha", Name: "alpha", DisplayName: "Alpha", DefaultEffort: "medium", Efforts: []string{"medium", "high"}, IsDefault: true},
	{ID: "beta", Name: "beta", DisplayName: "Beta", DefaultEffort: "low", Efforts: []string{"low", "xhigh"}},
}

// fakeStore keeps lanes by session key.
type fakeStore struct {
	mu    sync.Mutex
	lanes map[string]store.Lane
}

func (s *fakeStore) Lane(_ context.Context, key string) (store.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl, ok := s.lanes[key]; ok {
		return sl, nil
	}
	return store.Lane{}, store.ErrNotFound
}

func (s *fakeStore) EnsureLane(_ context.Context, k store.LaneKey) (store.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.lanes[k.SessionKey]; !ok {
		s.lanes[k.SessionKey] = store.Lane{SessionKey: k.SessionKey}
	}
	return s.lanes[k.SessionKey], nil
}

func (s *fakeStore) SetLaneOption(_ context.Context, key string, opt store.LaneOption, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.lanes[key]
	switch opt {
	case store.OptionModel:
		sl.Model = value
	case store.OptionEffort:
		sl.Effort = value
	default:
		return errors.New("fake store: unexpected option")
	}
	s.lanes[key] = sl
	return nil
}

func (s *fakeStore) lane(key string) store.Lane {
	sl, _ := s.Lane(context.Background(), key)
	return sl
}

// fakeRuntime lists testModels (or fails with listErr) and counts the
// calls.
type fakeRuntime struct {
	mu       sync.Mutex
	listErr  error
	lists    int
	defaults codex.ModelDefaults
}

func (r *fakeRuntime) ListModels(context.Context) ([]codex.Model, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists++
	if r.listErr != nil {
		return nil, r.listErr
	}
	return testModels, nil
}

func (r *fakeRuntime) ModelDefaults(context.Context) (codex.ModelDefaults, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.defaults, nil
}

func (r *fakeRuntime) listCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lists
}

func (r *fakeRuntime) setListErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listErr = err
}

// world is the models feature on the fake host, with one lane and a clock
// the test moves.
type world struct {
	h    *exttest.Host
	st   *fakeStore
	cx   *fakeRuntime
	m    *Models
	lane *exttest.Lane
	now  time.Time
}

func newWorld(t *testing.T, model, effort string) *world {
	t.Helper()
	w := &world{h: exttest.NewHost(t), cx: &fakeRuntime{defaults: codex.ModelDefaults{Model: "alpha"}},
		lane: &exttest.Lane{Addr: chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}},
		now:  time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	w.st = &fakeStore{lanes: map[string]store.Lane{w.lane.Key(): {SessionKey: w.lane.Key()}}}
	w.h.Clock = func() time.Time { return w.now }
	w.m = New(model, effort, w.st, w.cx)
	w.h.Register(t, w.m)
	return w
}

// ask runs the command line cmd ("/model beta") in the lane and returns
// the last notice.
func (w *world) ask(t *testing.T, line string) string {
	t.Helper()
	name, args, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
	if !w.h.Run(context.Background(), w.lane, name, args, "q") {
		t.Fatalf("%s: not answered", line)
	}
	n := w.h.Notices()
	if len(n) == 0 {
		t.Fatalf("%s: no answer", line)
	}
	return n[len(n)-1].Text
}

// turn runs the input hooks of a turn of the lane.
func (w *world) turn() codex.TurnInput {
	var in codex.TurnInput
	w.h.Input(context.Background(), w.lane, w.st.lane(w.lane.Key()), &in)
	return in
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s answered %q, want it to contain %q", what, got, want)
		}
	}
}

// A codex that cannot list its models still gets /model answered, with
// the reason; nothing is stored, and the list is asked again only after
// modelRetryAfter.
func TestModelListFailureIsAnsweredAndStoresNothing(t *testing.T) {
	w := newWorld(t, "", "")
	w.cx.setListErr(errors.New("model/list: boom"))
	wantContains(t, "/model", w.ask(t, "/model"), "Model: alpha (default)", "Could not list Codex's models: model/list: boom")
	wantContains(t, "/model beta", w.ask(t, "/model beta"), "Could not check the model against Codex's list: model/list: boom. Nothing changed.")
	wantContains(t, "/effort low", w.ask(t, "/effort low"), "Could not check the effort", "Nothing changed.")
	if l := w.st.lane(w.lane.Key()); l.Model != "" || l.Effort != "" {
		t.Errorf("stored model %q effort %q after failures, want none", l.Model, l.Effort)
	}
	if n := w.cx.listCalls(); n != 1 {
		t.Errorf("model/list called %d times within %v of a failure, want 1", n, modelRetryAfter)
	}
	w.cx.setListErr(nil)
	w.now = w.now.Add(modelRetryAfter + time.Second)
	wantContains(t, "/model beta", w.ask(t, "/model beta"), "Model: beta.")
	if l := w.st.lane(w.lane.Key()); l.Model != "beta" {
		t.Errorf("stored model %q once codex answers again, want beta", l.Model)
	}
}

func TestModelListIsCachedBriefly(t *testing.T) {
	w := newWorld(t, "", "")
	w.ask(t, "/model")
	w.ask(t, "/model beta")
	if in := w.turn(); in.Model != "beta" || in.Effort != "low" {
		t.Errorf("turn: model %q effort %q, want beta and its default low", in.Model, in.Effort)
	}
	if n := w.cx.listCalls(); n != 1 {
		t.Errorf("model/list called %d times within the cache's life, want 1", n)
	}
	w.now = w.now.Add(modelCacheTTL + time.Second)
	w.ask(t, "/model")
	if n := w.cx.listCalls(); n != 2 {
		t.Errorf("model/list called %d times after the cache expired, want 2", n)
	}
}

// Models is the cached list and the default a lane without a choice runs:
// codex's default, or codex.model when configured.
func TestModelsForTheConsole(t *testing.T) {
	w := newWorld(t, "", "")
	models, def, err := w.m.Models(context.Background())
	if err != nil || len(models) != 2 || models[1].ID != "beta" || def != "alpha" {
		t.Fatalf("Models() = %v, %q, %v; want the listed two and alpha", models, def, err)
	}
	w.m.Models(context.Background())
	if n := w.cx.listCalls(); n != 1 {
		t.Errorf("model/list called %d times for two Models calls, want 1 (cached)", n)
	}
	configured := newWorld(t, "beta", "")
	if _, def, _ := configured.m.Models(context.Background()); def != "beta" {
		t.Errorf("default with codex.model beta = %q, want beta", def)
	}
	failing := newWorld(t, "", "")
	failing.cx.setListErr(errors.New("model/list: boom"))
	if _, _, err := failing.m.Models(context.Background()); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Models() with a failing list: err %v, want the failure", err)
	}
}

// /model's buttons carry the model ids, /effort's the efforts of the
// lane's model; the text alone says how to choose.
func TestChoicesCarryTheButtons(t *testing.T) {
	w := newWorld(t, "", "")
	w.ask(t, "/model")
	n := w.h.Notices()
	var ids []string
	for _, b := range n[len(n)-1].Buttons {
		ids = append(ids, b.ID+"="+b.Label)
	}
	if got, want := strings.Join(ids, " "), "model:alpha=alpha model:beta=beta"; got != want {
		t.Errorf("/model buttons %q, want %q", got, want)
	}
	wantContains(t, "/effort", w.ask(t, "/effort"), "Efforts: medium, high", "/effort LEVEL")
	n = w.h.Notices()
	if b := n[len(n)-1].Buttons; len(b) != 2 || b[0].ID != "effort:medium" || b[1].ID != "effort:high" {
		t.Errorf("/effort buttons %+v, want effort:medium and effort:high", b)
	}
}
