package codex

import (
	"reflect"
	"testing"
)

// fakeModelPage is the fake app-server's model/list: two pages, the second
// with a hidden model, so the client must follow nextCursor and filter.
func fakeModelPage(cursor string) map[string]any {
	efforts := func(es ...string) []map[string]any {
		out := make([]map[string]any, 0, len(es))
		for _, e := range es {
			out = append(out, map[string]any{"reasoningEffort": e, "description": e})
		}
		return out
	}
	model := func(id string, isDefault, hidden bool, es ...string) map[string]any {
		return map[string]any{"id": id, "model": id, "displayName": "Model " + id, "description": "",
			"defaultReasoningEffort": es[0], "isDefault": isDefault, "hidden": hidden,
			"supportedReasoningEfforts": efforts(es...)}
	}
	if cursor == "" {
		return map[string]any{"data": []any{model("alpha", true, false, "medium", "high")}, "nextCursor": "page2"}
	}
	return map[string]any{"data": []any{
		model("beta", false, false, "low", "xhigh"),
		model("secret", false, true, "low"),
	}, "nextCursor": nil}
}

func TestListModelsFollowsTheCursorAndHidesHidden(t *testing.T) {
	t.Parallel()
	fc := startFake(t, fakeConfig{})
	models, err := fc.ListModels(testCtx(t))
	if err != nil {
		t.Fatalf("ListModels: %v", err)
	}
	want := []Model{
		{ID: "alpha", Name: "alpha", DisplayName: "Model alpha", DefaultEffort: "medium", Efforts: []string{"medium", "high"}, IsDefault: true},
		{ID: "beta", Name: "beta", DisplayName: "Model beta", DefaultEffort: "low", Efforts: []string{"low", "xhigh"}},
	}
	if !reflect.DeepEqual(models, want) {
		t.Errorf("ListModels = %+v\nwant %+v", models, want)
	}
	if got := count(fc.received(t), "model/list"); got != 2 {
		t.Errorf("model/list sent %d times, want 2 (one per page)", got)
	}
}

func TestTurnParamsCarryModelAndEffort(t *testing.T) {
	tests := []struct {
		name string
		in   TurnInput
		want map[string]any // the model and effort keys of turn/start
	}{
		{"neither", TurnInput{Text: "x"}, map[string]any{}},
		{"both", TurnInput{Text: "x", Model: "m1", Effort: "high"}, map[string]any{"model": "m1", "effort": "high"}},
		{"effort only", TurnInput{Text: "x", Effort: "low"}, map[string]any{"effort": "low"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.in.params("T1")
			got := map[string]any{}
			for _, k := range []string{"model", "effort"} {
				if v, ok := p[k]; ok {
					got[k] = v
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("turn/start params model/effort = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestModelSupportsEffort(t *testing.T) {
	m := Model{ID: "a", Efforts: []string{"low", "high"}}
	if !m.SupportsEffort("high") || m.SupportsEffort("max") || m.SupportsEffort("") {
		t.Errorf("SupportsEffort on %v: high, max, \"\" = %v, %v, %v; want true, false, false",
			m.Efforts, m.SupportsEffort("high"), m.SupportsEffort("max"), m.SupportsEffort(""))
	}
}
