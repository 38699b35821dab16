package codex

import (
	"encoding/json"
	"testing"
)

func TestCollaborationParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   TurnInput
		want string // the collaborationMode JSON, "" for none
	}{
		{"no mode", TurnInput{Model: "m"}, ""},
		{"no model", TurnInput{Mode: ModePlan}, ""}, // settings.model is required: sending none would fail the turn
		{"plan", TurnInput{Mode: ModePlan, Model: "m"}, `{"mode":"plan","settings":{"developer_instructions":null,"model":"m"}}`},
		{"default with effort", TurnInput{Mode: ModeDefault, Model: "m", Effort: "high"},
			`{"mode":"default","settings":{"developer_instructions":null,"model":"m","reasoning_effort":"high"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.in.params("th")
			got := ""
			if cm, ok := p["collaborationMode"]; ok {
				raw, _ := json.Marshal(cm)
				got = string(raw)
			}
			if got != tc.want {
				t.Errorf("collaborationMode = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestUserInputAnswerShape(t *testing.T) {
	raw, _ := json.Marshal(userInputAnswer(map[string][]string{"db": {"PostgreSQL"}, "none": nil}))
	if want := `{"answers":{"db":{"answers":["PostgreSQL"]},"none":{"answers":[]}}}`; string(raw) != want {
		t.Errorf("answer = %s, want %s", raw, want)
	}
}

func TestParseUserInput(t *testing.T) {
	req, err := parseUserInput(json.RawMessage(`{"threadId":"t","turnId":"u","itemId":"i","isBlocking":true,
		"questions":[{"id":"q","header":"H","question":"Q?","isOther":true,"isSecret":true,"options":[{"label":"a","description":"d"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	q := req.Questions[0]
	if req.ThreadID != "t" || req.TurnID != "u" || req.ItemID != "i" || q.ID != "q" || q.Header != "H" || !q.IsOther || !q.IsSecret ||
		len(q.Options) != 1 || q.Options[0] != (QuestionOption{Label: "a", Description: "d"}) {
		t.Errorf("parsed %+v", req)
	}
	if _, err := parseUserInput(json.RawMessage(`{"questions": "nope"}`)); err == nil {
		t.Error("malformed params parsed")
	}
}
