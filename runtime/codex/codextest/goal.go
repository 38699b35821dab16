package codextest

import "strings"

// GoalContinuationMarker opens the last user message of a turn codex
// started on its own to keep working on a thread's goal.
const GoalContinuationMarker = `<codex_internal_context source="goal">`

// IsGoalContinuation reports whether req is the model request of a turn
// codex ran on its own for the thread's goal (no client asked for it).
func (r Request) IsGoalContinuation() bool {
	return strings.Contains(r.LastUserText(), GoalContinuationMarker)
}

// UpdateGoal returns a ToolCall of codex's update_goal tool: the model
// reporting the thread's goal as status ("complete" meets it; "paused"
// pauses it). Codex answers it with the goal's figures as the tool output.
func UpdateGoal(callID, status string) *ToolCall {
	return &ToolCall{CallID: callID, Name: "update_goal", Arguments: map[string]any{"status": status}}
}

// GoalReply scripts a model that works on a thread's goal: a goal's
// continuation turn meets it (update_goal complete) when meet says so and
// answers done after the tool, and every other request is DefaultReply's.
// usage, when not zero, is what each answer reports: the tokens codex
// counts against the goal's budget.
func GoalReply(meet func(Request) bool, done string, usage Usage) func(Request) Reply {
	return func(req Request) Reply {
		var reply Reply
		out, afterTool := req.ToolOutput()
		switch {
		case afterTool && strings.Contains(out, `"goal":{`): // update_goal's answer
			reply = Reply{Text: done}
		case req.IsGoalContinuation() && meet(req):
			reply = Reply{ToolCall: UpdateGoal("call_goal_"+req.ThreadID(), "complete")}
		case req.IsGoalContinuation():
			reply = Reply{Text: "Still working on the goal."}
		default:
			reply = DefaultReply(req)
		}
		reply.Usage = usage
		return reply
	}
}
