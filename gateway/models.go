package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Model and effort per lane. A lane may choose one of the models
// codex lists (model/list) with /model and one of that model's reasoning
// efforts with /effort. Both are stored with the lane's routing, so they
// outlive /new, rotation, eviction and restarts, and both go with every
// turn/start: codex keeps turn/start's model and effort for the thread's
// later turns, so a lane that goes back to the default must name it, and
// a resumed thread is told again rather than trusted to remember.
//
// Defaults, in order: the lane's choice, the gateway's configuration
// (codex.model, codex.effort), codex's own (config/read), and for the
// effort the model's default from model/list.
//
// /model default clears the lane's model; its effort is cleared too only
// when the default model is listed and does not support it (an effort a
// listed model supports is kept: the lane chose it on purpose). Choosing a
// model that does not support the lane's effort clears the effort likewise.

// Button id prefixes of /model's and /effort's buttons.
const (
	modelPrefix  = "model:"
	effortPrefix = "effort:"
)

// modelCacheTTL is how long a model/list or config/read answer is reused:
// they change only with a codex upgrade or a config edit, and every turn
// consults them. After a failure the call is tried again only after
// modelRetryAfter, so a codex that cannot answer does not cost every turn
// a call.
const (
	modelCacheTTL   = 5 * time.Minute
	modelRetryAfter = 30 * time.Second
)

// defaultWord is the argument that clears a lane's choice.
const defaultWord = "default"

// laneModels is /model and /effort: the model and reasoning effort
// each lane runs with, checked against codex's list, sent with every
// turn and shown by /status. It owns the cache of codex's answers.
type laneModels struct {
	st          modelStore
	cx          modelRuntime
	cache       *modelCache
	out         *deliverer // answers and the choice buttons
	log         *zap.Logger
	model       string        // codex.model: the model of lanes that chose none ("" = codex's)
	effort      string        // codex.effort: the effort of lanes that chose none ("" = the model's)
	callTimeout time.Duration // bounds the model/list and config/read calls
}

// modelStore is the lane's row, where its model and effort are stored.
type modelStore interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	EnsureLane(ctx context.Context, k store.LaneKey) (store.Lane, error)
	SetLaneOption(ctx context.Context, sessionKey string, opt store.LaneOption, value string) error
}

var (
	_ modelStore   = (*store.Store)(nil)
	_ modelRuntime = (*codex.Client)(nil)
)

func newLaneModels(cfg Config, st modelStore, cx modelRuntime, out *deliverer, log *zap.Logger) *laneModels {
	return &laneModels{st: st, cx: cx, cache: newModelCache(cfg.Now), out: out, log: log,
		model: cfg.Thread.Model, effort: cfg.Effort, callTimeout: steerTimeout}
}

// register adds /model, /effort and their buttons, the turn's model and
// effort, and the /status line.
func (lm *laneModels) register(h *host) {
	h.command("model", lm.modelCommand)
	h.command("effort", lm.effortCommand)
	h.hooks.input = append(h.hooks.input, lm.input)
	h.hooks.status = append(h.hooks.status, lm.status)
	h.callback(modelPrefix, lm.pressed)
	h.callback(effortPrefix, lm.pressed)
}

// cachedAnswer is one codex answer, reused until it is stale. A failed
// refresh keeps the last good answer.
type cachedAnswer[T any] struct {
	mu     sync.Mutex
	val    T
	ok     bool      // val is a real answer
	at     time.Time // of the last attempt
	failed bool      // the last attempt failed
	err    error
}

func (c *cachedAnswer[T]) get(now func() time.Time, fetch func() (T, error)) (T, error) {
	c.mu.Lock()
	age := now().Sub(c.at)
	switch {
	case !c.at.IsZero() && !c.failed && age < modelCacheTTL:
		defer c.mu.Unlock()
		return c.val, nil
	case !c.at.IsZero() && c.failed && age < modelRetryAfter:
		defer c.mu.Unlock()
		if c.ok {
			return c.val, nil
		}
		return c.val, c.err
	}
	c.mu.Unlock()
	// Not held while codex answers: a hung call must not hold up the
	// turns of other lanes beyond their own bound.
	val, err := fetch()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at, c.failed, c.err = now(), err != nil, err
	if err != nil {
		if c.ok {
			return c.val, nil
		}
		return val, err
	}
	c.val, c.ok = val, true
	return val, nil
}

// modelCache caches the codex answers about models.
type modelCache struct {
	now      func() time.Time
	models   cachedAnswer[[]codex.Model]
	defaults cachedAnswer[codex.ModelDefaults]
}

func newModelCache(now func() time.Time) *modelCache { return &modelCache{now: now} }

// list returns codex's models, cached.
func (c *modelCache) list(ctx context.Context, cx modelRuntime) ([]codex.Model, error) {
	return c.models.get(c.now, func() ([]codex.Model, error) { return cx.ListModels(ctx) })
}

// codexDefaults returns codex's own defaults, cached; zero when unknown.
func (c *modelCache) codexDefaults(ctx context.Context, cx modelRuntime) (codex.ModelDefaults, error) {
	return c.defaults.get(c.now, func() (codex.ModelDefaults, error) { return cx.ModelDefaults(ctx) })
}

// findModel returns the listed model name means: the same id, else the
// only one whose id, slug or display name equals it ignoring case.
func findModel(models []codex.Model, name string) (codex.Model, bool) {
	for _, m := range models {
		if m.ID == name {
			return m, true
		}
	}
	var found []codex.Model
	for _, m := range models {
		if strings.EqualFold(m.ID, name) || strings.EqualFold(m.Name, name) || strings.EqualFold(m.DisplayName, name) {
			found = append(found, m)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return codex.Model{}, false
}

// listed joins the valid values for a refusal.
func listed(values []string) string {
	if len(values) == 0 {
		return "none are listed by codex"
	}
	return strings.Join(values, ", ")
}

func modelIDs(models []codex.Model) []string {
	ids := make([]string, 0, len(models))
	for _, m := range models {
		ids = append(ids, m.ID)
	}
	return ids
}

// knownEfforts are the efforts any listed model supports, in first-seen
// order: what an unlisted model (a custom provider's) is checked against.
func knownEfforts(models []codex.Model) []string {
	var out []string
	for _, m := range models {
		for _, e := range m.Efforts {
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}

// effortsFor are the efforts a lane running model may choose.
func effortsFor(models []codex.Model, model string) []string {
	if m, ok := findModel(models, model); ok {
		return m.Efforts
	}
	return knownEfforts(models)
}

// call bounds a model/list or config/read made for a command: commands
// run on the platform's delivery goroutine.
func (lm *laneModels) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, lm.callTimeout)
}

// catalog is codex's model list (model/list, cached) and the model a lane
// that chose none runs ("" when unknown), for the console's choices.
func (lm *laneModels) catalog(ctx context.Context) (models []codex.Model, defaultModel string, err error) {
	ctx, cancel := lm.call(ctx)
	defer cancel()
	models, err = lm.cache.list(ctx, lm.cx)
	if err != nil {
		return nil, "", err
	}
	return models, lm.defaultModel(ctx), nil
}

// Models is codex's model list (model/list, cached) and the model a lane
// that chose none runs ("" when unknown): the console's ModelSource.
func (g *Gateway) Models(ctx context.Context) (models []codex.Model, defaultModel string, err error) {
	return g.models.catalog(ctx)
}

// defaultModel is the model of a lane that chose none ("" when unknown).
func (lm *laneModels) defaultModel(ctx context.Context) string {
	if lm.model != "" {
		return lm.model
	}
	d, err := lm.cache.codexDefaults(ctx, lm.cx)
	if err != nil {
		lm.log.Debug("model.defaults_failed", zap.Error(err))
	}
	if d.Model != "" {
		return d.Model
	}
	if models, err := lm.cache.list(ctx, lm.cx); err == nil {
		for _, m := range models {
			if m.IsDefault {
				return m.ID
			}
		}
	}
	return ""
}

// defaultEffort is the effort of a lane running model that chose none.
func (lm *laneModels) defaultEffort(ctx context.Context, model string) string {
	if lm.effort != "" {
		return lm.effort
	}
	if d, _ := lm.cache.codexDefaults(ctx, lm.cx); d.Effort != "" {
		return d.Effort
	}
	models, err := lm.cache.list(ctx, lm.cx)
	if err != nil {
		return ""
	}
	if m, ok := findModel(models, model); ok {
		return m.DefaultEffort
	}
	return ""
}

// ofLane is the model and effort a turn of the stored lane sl runs
// with; "" where nothing is known (the thread keeps what it has).
func (lm *laneModels) ofLane(ctx context.Context, sl store.Lane) (model, effort string) {
	ctx, cancel := lm.call(ctx)
	defer cancel()
	model = sl.Model
	if model == "" {
		model = lm.defaultModel(ctx)
	}
	effort = sl.Effort
	if effort == "" {
		effort = lm.defaultEffort(ctx, model)
	}
	return model, effort
}

// input is the input hook: it sets the turn's model and effort.
func (lm *laneModels) input(ctx context.Context, t *turn, in *codex.TurnInput) {
	in.Model, in.Effort = lm.ofLane(ctx, t.sl)
}

// status is the status hook: /status's line about the lane's model and
// effort.
func (lm *laneModels) status(_ context.Context, sl store.Lane, b *strings.Builder) {
	fmt.Fprintf(b, "Model: %s, effort %s\n", choiceOr(sl.Model, lm.model), choiceOr(sl.Effort, lm.effort))
}

// choiceOr describes a lane's choice, or the default it falls back to.
func choiceOr(choice, configured string) string {
	switch {
	case choice != "":
		return choice
	case configured != "":
		return "default (" + configured + ")"
	}
	return defaultWord
}

// modelCommand is /model (show and list) and /model NAME|default (set).
func (lm *laneModels) modelCommand(ctx context.Context, c commandCall) bool {
	if c.args == "" {
		lm.showModels(ctx, c.lane, c.msgID)
		return true
	}
	lm.out.Notify(ctx, c.lane.addr, c.msgID, lm.setModel(ctx, c.lane.addr, c.args))
	return true
}

// effortCommand is /effort (show and list) and /effort LEVEL|default (set).
func (lm *laneModels) effortCommand(ctx context.Context, c commandCall) bool {
	if c.args == "" {
		lm.showEfforts(ctx, c.lane, c.msgID)
		return true
	}
	lm.out.Notify(ctx, c.lane.addr, c.msgID, lm.setEffort(ctx, c.lane.addr, c.args))
	return true
}

func (lm *laneModels) showModels(ctx context.Context, l *lane, msgID string) {
	current, _, models, ok := lm.choices(ctx, l, msgID, "model")
	if !ok {
		return
	}
	var b strings.Builder
	b.WriteString(current + "\nModels:\n")
	var buttons []Button
	for _, m := range models {
		fmt.Fprintf(&b, "• %s — %s (efforts: %s)\n", m.ID, m.DisplayName, strings.Join(m.Efforts, ", "))
		if id := modelPrefix + m.ID; len(id) <= maxButtonID {
			buttons = append(buttons, Button{ID: id, Label: m.ID})
		}
	}
	b.WriteString("Choose with /model NAME; /model default goes back to the default.")
	lm.out.sendWithButtons(ctx, l.addr, msgID, b.String(), buttons)
}

// choices loads what /model and /effort show: a line on the lane's
// model and effort, the model it runs with, and codex's models. A
// failure is answered here (what names the setting) and ok is false.
func (lm *laneModels) choices(ctx context.Context, l *lane, msgID, what string) (
	current, model string, models []codex.Model, ok bool) {
	sl, err := lm.st.Lane(ctx, l.key)
	if err != nil {
		lm.log.Warn(what+".lane_failed", zap.String("lane", l.key), zap.Error(err))
		lm.out.Notify(ctx, l.addr, msgID, "Could not read this conversation's "+what+" (storage error). Please try again.")
		return "", "", nil, false
	}
	cctx, cancel := lm.call(ctx)
	defer cancel()
	current = lm.describe(cctx, sl)
	models, err = lm.cache.list(cctx, lm.cx)
	if err != nil {
		lm.log.Warn("model.list_failed", zap.String("lane", l.key), zap.Error(err))
		lm.out.Notify(ctx, l.addr, msgID, current+"\nCould not list Codex's models: "+briefError(err))
		return current, "", nil, false
	}
	return current, lm.modelOf(cctx, sl), models, true
}

// describe says which model and effort the lane runs with.
func (lm *laneModels) describe(ctx context.Context, sl store.Lane) string {
	model := lm.modelOf(ctx, sl)
	effort := sl.Effort
	if effort == "" {
		effort = lm.defaultEffort(ctx, model)
	}
	return fmt.Sprintf("Model: %s\nEffort: %s", chosenOr(sl.Model, model), chosenOr(sl.Effort, effort))
}

// chosenOr names the lane's choice, or the default in effect.
func chosenOr(choice, effective string) string {
	if choice != "" {
		return choice
	}
	return orCodexDefault(effective) + " (default)"
}

// orCodexDefault is s, or the words for a default codex does not name.
func orCodexDefault(s string) string {
	if s == "" {
		return "codex's own"
	}
	return s
}

// modelOf is the model the lane runs with: its choice or the default.
func (lm *laneModels) modelOf(ctx context.Context, sl store.Lane) string {
	if sl.Model != "" {
		return sl.Model
	}
	return lm.defaultModel(ctx)
}

func (lm *laneModels) showEfforts(ctx context.Context, l *lane, msgID string) {
	current, model, models, ok := lm.choices(ctx, l, msgID, "effort")
	if !ok {
		return
	}
	efforts := effortsFor(models, model)
	buttons := make([]Button, 0, len(efforts))
	for _, e := range efforts {
		buttons = append(buttons, Button{ID: effortPrefix + e, Label: e})
	}
	text := fmt.Sprintf("%s\nEfforts: %s\nChoose with /effort LEVEL; /effort default goes back to the default.",
		current, strings.Join(efforts, ", "))
	lm.out.sendWithButtons(ctx, l.addr, msgID, text, buttons)
}

// setModel stores the model named name (or clears it for "default") as
// the lane's at addr and says what happened. Nothing is stored for a name
// model/list does not know.
func (lm *laneModels) setModel(ctx context.Context, addr Address, name string) string {
	key := addr.SessionKey()
	sl, err := lm.st.Lane(ctx, key)
	if err != nil {
		lm.log.Warn("model.lane_failed", zap.String("lane", key), zap.Error(err))
		return "Could not change the model (storage error). Please try again."
	}
	cctx, cancel := lm.call(ctx)
	defer cancel()
	models, err := lm.cache.list(cctx, lm.cx)
	if err != nil {
		lm.log.Warn("model.list_failed", zap.String("lane", key), zap.Error(err))
		return "Could not check the model against Codex's list: " + strings.TrimSuffix(briefError(err), ".") + ". Nothing changed."
	}
	if strings.EqualFold(name, defaultWord) {
		return lm.clearModel(cctx, key, sl, models)
	}
	m, ok := findModel(models, name)
	if !ok {
		return fmt.Sprintf("Unknown model %q. Choose one of: %s (or default). Nothing changed.", name, listed(modelIDs(models)))
	}
	if err := lm.st.SetLaneOption(ctx, key, store.OptionModel, m.ID); err != nil {
		lm.log.Error("model.store_failed", zap.String("lane", key), zap.Error(err))
		return "Could not change the model (storage error). Please try again."
	}
	lm.log.Info("model.set", zap.String("lane", key), zap.String("model", m.ID))
	reply := fmt.Sprintf("Model: %s. The next turn uses it; the Codex thread is kept.", m.ID)
	return reply + lm.dropUnsupportedEffort(ctx, key, sl.Effort, m)
}

// clearModel is /model default.
func (lm *laneModels) clearModel(ctx context.Context, key string, sl store.Lane, models []codex.Model) string {
	if err := lm.st.SetLaneOption(ctx, key, store.OptionModel, ""); err != nil {
		lm.log.Error("model.store_failed", zap.String("lane", key), zap.Error(err))
		return "Could not change the model (storage error). Please try again."
	}
	lm.log.Info("model.cleared", zap.String("lane", key))
	def := lm.defaultModel(ctx)
	reply := fmt.Sprintf("Model: the default (%s) from the next turn.", orCodexDefault(def))
	if m, ok := findModel(models, def); ok {
		reply += lm.dropUnsupportedEffort(ctx, key, sl.Effort, m)
	}
	return reply
}

// dropUnsupportedEffort clears the lane's effort when m does not support
// it and says so ("" when nothing changed).
func (lm *laneModels) dropUnsupportedEffort(ctx context.Context, key, effort string, m codex.Model) string {
	if effort == "" || m.SupportsEffort(effort) {
		return ""
	}
	if err := lm.st.SetLaneOption(ctx, key, store.OptionEffort, ""); err != nil {
		lm.log.Error("effort.store_failed", zap.String("lane", key), zap.Error(err))
		return fmt.Sprintf(" Its efforts are %s; the effort %s could not be cleared (storage error): send /effort default.",
			strings.Join(m.Efforts, ", "), effort)
	}
	lm.log.Info("effort.cleared", zap.String("lane", key), zap.String("reason", "unsupported by "+m.ID))
	return fmt.Sprintf(" It does not support the effort %s, so the effort is back to its default (%s).", effort, orCodexDefault(m.DefaultEffort))
}

// setEffort stores level (or clears it for "default") as the lane's
// effort at addr. Nothing is stored for a level the lane's model does not
// support.
func (lm *laneModels) setEffort(ctx context.Context, addr Address, level string) string {
	key := addr.SessionKey()
	if strings.EqualFold(level, defaultWord) {
		if err := lm.st.SetLaneOption(ctx, key, store.OptionEffort, ""); err != nil {
			lm.log.Error("effort.store_failed", zap.String("lane", key), zap.Error(err))
			return "Could not change the effort (storage error). Please try again."
		}
		lm.log.Info("effort.cleared", zap.String("lane", key))
		return "Effort: the model's default from the next turn."
	}
	sl, err := lm.st.Lane(ctx, key)
	if err != nil {
		lm.log.Warn("effort.lane_failed", zap.String("lane", key), zap.Error(err))
		return "Could not change the effort (storage error). Please try again."
	}
	cctx, cancel := lm.call(ctx)
	defer cancel()
	models, err := lm.cache.list(cctx, lm.cx)
	if err != nil {
		lm.log.Warn("model.list_failed", zap.String("lane", key), zap.Error(err))
		return "Could not check the effort against Codex's models: " + strings.TrimSuffix(briefError(err), ".") + ". Nothing changed."
	}
	model := lm.modelOf(cctx, sl)
	efforts := effortsFor(models, model)
	level = strings.ToLower(level)
	if !slices.Contains(efforts, level) {
		return fmt.Sprintf("The model %s does not support the effort %q. Choose one of: %s (or default). Nothing changed.",
			orCodexDefault(model), level, listed(efforts))
	}
	if err := lm.st.SetLaneOption(ctx, key, store.OptionEffort, level); err != nil {
		lm.log.Error("effort.store_failed", zap.String("lane", key), zap.Error(err))
		return "Could not change the effort (storage error). Please try again."
	}
	lm.log.Info("effort.set", zap.String("lane", key), zap.String("effort", level))
	return fmt.Sprintf("Effort: %s. The next turn uses it.", level)
}

// pressed handles a press of a /model or /effort button; the host routes
// only those prefixes here.
func (lm *laneModels) pressed(ctx context.Context, in Inbound) {
	set := lm.setModel
	value, ok := strings.CutPrefix(in.Callback, modelPrefix)
	if !ok {
		if value, ok = strings.CutPrefix(in.Callback, effortPrefix); !ok {
			return
		}
		set = lm.setEffort
	}
	if _, err := lm.st.EnsureLane(ctx, laneKey(in.Address)); err != nil {
		lm.log.Error("model.lane_failed", zap.String("lane", in.Address.SessionKey()), zap.Error(err))
		lm.out.Notify(ctx, in.Address, "", "Could not change the setting (storage error). Please try again.")
		return
	}
	lm.out.Notify(ctx, in.Address, "", set(ctx, in.Address, value))
}
