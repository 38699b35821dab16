package codex

import (
	"context"
	"fmt"
	"strings"
)

// Model is one entry of model/list: a model the app-server offers, with the
// reasoning efforts it accepts on turn/start.
type Model struct {
	ID          string // what turn/start's model takes
	Name        string // the model slug ("model" in the list; usually the id)
	DisplayName string
	Description string
	// DefaultEffort is the effort the model runs with when none is chosen.
	DefaultEffort string
	// Efforts are the supportedReasoningEfforts, in the listed order.
	Efforts   []string
	IsDefault bool
	Hidden    bool
}

// SupportsEffort reports whether effort is one of the model's efforts.
func (m Model) SupportsEffort(effort string) bool {
	for _, e := range m.Efforts {
		if e == effort {
			return true
		}
	}
	return false
}

// wireModel is a Model as model/list sends it.
type wireModel struct {
	ID                        string `json:"id"`
	Model                     string `json:"model"`
	DisplayName               string `json:"displayName"`
	Description               string `json:"description"`
	DefaultReasoningEffort    string `json:"defaultReasoningEffort"`
	IsDefault                 bool   `json:"isDefault"`
	Hidden                    bool   `json:"hidden"`
	SupportedReasoningEfforts []struct {
		ReasoningEffort string `json:"reasoningEffort"`
	} `json:"supportedReasoningEfforts"`
}

func (w wireModel) model() Model {
	m := Model{ID: w.ID, Name: w.Model, DisplayName: w.DisplayName, Description: w.Description,
		DefaultEffort: w.DefaultReasoningEffort, IsDefault: w.IsDefault, Hidden: w.Hidden}
	if m.ID == "" {
		m.ID = w.Model
	}
	for _, e := range w.SupportedReasoningEfforts {
		if e.ReasoningEffort != "" {
			m.Efforts = append(m.Efforts, e.ReasoningEffort)
		}
	}
	return m
}

// maxModelPages bounds the model/list pagination: a server that keeps
// answering with a cursor must not keep us looping.
const maxModelPages = 20

// ListModels returns the models model/list offers (hidden ones left out),
// following nextCursor. With a custom provider codex still lists its
// built-in presets (docs/codex-app-server.md §11).
func (c *Client) ListModels(ctx context.Context) ([]Model, error) {
	var models []Model
	cursor := ""
	for page := 0; page < maxModelPages; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var out struct {
			Data       []wireModel `json:"data"`
			NextCursor *string     `json:"nextCursor"`
		}
		if _, err := c.callLive(ctx, "model/list", params, &out); err != nil {
			return nil, fmt.Errorf("codex: model/list: %w", err)
		}
		for _, w := range out.Data {
			if m := w.model(); m.ID != "" && !m.Hidden {
				models = append(models, m)
			}
		}
		if out.NextCursor == nil || *out.NextCursor == "" || *out.NextCursor == cursor {
			return models, nil
		}
		cursor = *out.NextCursor
	}
	return nil, fmt.Errorf("codex: model/list: more than %d pages", maxModelPages)
}

// ModelDefaults are the model and reasoning effort codex runs a thread with
// when turn/start names none: its effective configuration (config.toml and
// the -c overrides). Either may be "" when codex leaves it to the model.
type ModelDefaults struct {
	Model, Effort string
}

// ModelDefaults reads them with config/read. The gateway needs them to
// undo a lane's choice: turn/start's model and effort stick to the thread
// for later turns, so going back to the default means naming it.
func (c *Client) ModelDefaults(ctx context.Context) (ModelDefaults, error) {
	var out struct {
		Config struct {
			Model  *string `json:"model"`
			Effort *string `json:"model_reasoning_effort"`
		} `json:"config"`
	}
	if _, err := c.callLive(ctx, "config/read", map[string]any{}, &out); err != nil {
		return ModelDefaults{}, fmt.Errorf("codex: config/read: %w", err)
	}
	return ModelDefaults{Model: deref(out.Config.Model), Effort: deref(out.Config.Effort)}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

// modelParams adds the turn's model and effort to turn/start's params:
// sent on every turn, because thread/resume does not restore the effort
// (and a lane's choice may have changed since the thread started).
func (in TurnInput) modelParams(p map[string]any) {
	if in.Model != "" {
		p["model"] = in.Model
	}
	if in.Effort != "" {
		p["effort"] = in.Effort
	}
}
