package webconsole

import (
	"context"
	"net/http"
	"sort"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// GoalSource is the lanes' goals: what each lane's Codex thread keeps
// working on (/goal). feature/goal is the one.
type GoalSource interface {
	// LaneGoals are the goals known, by the lane's session key.
	LaneGoals(ctx context.Context) map[string]codex.Goal
}

type goalView struct {
	Lane            string `json:"lane"`
	ThreadID        string `json:"threadId"`
	Objective       string `json:"objective"`
	Status          string `json:"status"`
	TokensUsed      int64  `json:"tokensUsed"`
	TokenBudget     int64  `json:"tokenBudget,omitempty"` // absent: no budget
	TimeUsedSeconds int64  `json:"timeUsedSeconds"`
}

// goals answers the lanes' goals, by lane (GET /api/goals).
func (c *Console) goals(w http.ResponseWriter, r *http.Request) {
	if c.goalSrc == nil {
		writeJSON(w, http.StatusServiceUnavailable, errorBody("goals are not available in this process"))
		return
	}
	byLane := c.goalSrc.LaneGoals(r.Context())
	views := make([]goalView, 0, len(byLane))
	for lane, g := range byLane {
		views = append(views, goalView{Lane: lane, ThreadID: g.ThreadID, Objective: g.Objective, Status: g.Status,
			TokensUsed: g.TokensUsed, TokenBudget: g.TokenBudget, TimeUsedSeconds: g.TimeUsedSeconds})
	}
	sort.Slice(views, func(i, j int) bool { return views[i].Lane < views[j].Lane })
	writeJSON(w, http.StatusOK, map[string]any{"goals": views})
}
