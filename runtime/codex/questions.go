package codex

import (
	"context"
	"encoding/json"

	"go.uber.org/zap"
)

// Questions (experimental, docs/codex-app-server.md §4): in Plan mode the model asks the user
// with its request_user_input tool, and the app-server sends the server
// request item/tool/requestUserInput with one or more questions. The
// answer maps each question id to the chosen labels or typed text.

// Collaboration modes of TurnInput.Mode.
const (
	ModePlan    = "plan"
	ModeDefault = "default"
)

// QuestionOption is one choice a question offers.
type QuestionOption struct {
	Label, Description string
}

// Question is one request_user_input question. With IsOther, or without
// options, a free-text answer is expected; IsSecret asks that the answer
// not be shown to others.
type Question struct {
	ID, Header, Question string
	Options              []QuestionOption
	IsOther, IsSecret    bool
}

// UserInputRequest is one item/tool/requestUserInput request, flattened.
type UserInputRequest struct {
	ThreadID, TurnID, ItemID string
	Questions                []Question
}

// UserInputHandler answers a request: answers maps question ids to the
// user's answers. ok false means nobody answered (timed out, cancelled):
// the model is then told the user gave no answer. Like an ApprovalHandler
// it runs on the request's own goroutine and ctx ends when the request is
// resolved elsewhere, its turn completes or the process dies; an answer
// returned after that is not sent.
type UserInputHandler func(ctx context.Context, req UserInputRequest) (answers map[string][]string, ok bool)

// userInputMethod is the server request of request_user_input.
const userInputMethod = "item/tool/requestUserInput"

func parseUserInput(params json.RawMessage) (UserInputRequest, error) {
	var p struct {
		ThreadID  string `json:"threadId"`
		TurnID    string `json:"turnId"`
		ItemID    string `json:"itemId"`
		Questions []struct {
			ID       string `json:"id"`
			Header   string `json:"header"`
			Question string `json:"question"`
			IsOther  bool   `json:"isOther"`
			IsSecret bool   `json:"isSecret"`
			Options  []struct {
				Label       string `json:"label"`
				Description string `json:"description"`
			} `json:"options"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return UserInputRequest{}, err
	}
	req := UserInputRequest{ThreadID: p.ThreadID, TurnID: p.TurnID, ItemID: p.ItemID}
	for _, q := range p.Questions {
		question := Question{ID: q.ID, Header: q.Header, Question: q.Question, IsOther: q.IsOther, IsSecret: q.IsSecret}
		for _, o := range q.Options {
			question.Options = append(question.Options, QuestionOption{Label: o.Label, Description: o.Description})
		}
		req.Questions = append(req.Questions, question)
	}
	return req, nil
}

// serveUserInput answers item/tool/requestUserInput with the handler's
// answers; without a handler the request is refused like any other.
func (c *Client) serveUserInput(ctx context.Context, cn *conn, id json.RawMessage, params json.RawMessage) {
	req, err := parseUserInput(params)
	if err != nil {
		c.log.Warn("codex.user_input_malformed", zap.Error(err))
		if err := cn.replyError(id, -32602, "malformed "+userInputMethod+" params"); err != nil {
			c.log.Debug("codex.reply_failed", zap.String("method", userInputMethod), zap.Error(err))
		}
		return
	}
	answers, ok := c.opts.UserInput(ctx, req)
	if ctx.Err() != nil {
		c.log.Info("codex.user_input_resolved_elsewhere", zap.String("thread_id", req.ThreadID), zap.String("item_id", req.ItemID))
		return
	}
	if !ok {
		answers = nil
	}
	c.log.Info("codex.user_input", zap.String("thread_id", req.ThreadID), zap.String("item_id", req.ItemID),
		zap.Int("questions", len(req.Questions)), zap.Int("answered", len(answers)))
	if err := cn.reply(id, userInputAnswer(answers)); err != nil {
		c.log.Warn("codex.reply_failed", zap.String("method", userInputMethod), zap.Error(err))
	}
}

// userInputAnswer is the ToolRequestUserInputResponse for answers.
func userInputAnswer(answers map[string][]string) map[string]any {
	out := make(map[string]any, len(answers))
	for qid, a := range answers {
		if a == nil {
			a = []string{}
		}
		out[qid] = map[string]any{"answers": a}
	}
	return map[string]any{"answers": out}
}

// collaborationParams adds the turn's collaboration mode to turn/start's
// params. The mode sticks to the thread, so leaving Plan mode means naming
// "default"; settings.model is required and the mode's settings take
// precedence over the turn's model and effort, so they carry the same.
// Null developer instructions keep the mode's built-in ones.
func (in TurnInput) collaborationParams(p map[string]any) {
	if in.Mode == "" || in.Model == "" {
		return
	}
	settings := map[string]any{"model": in.Model, "developer_instructions": nil}
	if in.Effort != "" {
		settings["reasoning_effort"] = in.Effort
	}
	p["collaborationMode"] = map[string]any{"mode": in.Mode, "settings": settings}
}
