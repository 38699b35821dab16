package gateway_test

import (
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestIntegrationGoalSetShownMetAndOutOfBudget: through the real
// app-server, /goal gives a lane's thread a goal codex then works on by
// itself, in turns the gateway did not start. Lane alpha's goal is met
// (the model calls update_goal): its lane hears the answer of that turn
// and, once, that the goal was met, with the tokens used. Lane beta's
// goal runs out of its budget (each answer reports 600 tokens) and is
// told so with its figures. /goal shows a goal, after a restart too (it
// is codex's, resumed with the thread); /goal off clears one.
func TestIntegrationGoalSetShownMetAndOutOfBudget(t *testing.T) {
	w := newWorld(t)
	meet := func(req codextest.Request) bool { return strings.Contains(req.InputText(), "MEET-ME") }
	w.model.Respond(codextest.GoalReply(meet, "GOAL DONE", codextest.Usage{InputTokens: 400, OutputTokens: 200}))
	gw := w.start(t, gateway.Config{})

	if r := gw.ask(t, "alpha", "/goal MEET-ME make the tests pass").Reply; !strings.Contains(r, "no Codex thread yet") {
		t.Errorf("/goal before any turn answered %q", r)
	}
	gw.ask(t, "alpha", "hello")
	gw.ask(t, "beta", "hello")
	if r := gw.ask(t, "alpha", "/goal MEET-ME make the tests pass").Reply; !strings.HasPrefix(r, "Goal set: MEET-ME make the tests pass.") {
		t.Errorf("/goal alpha answered %q", r)
	}
	if r := gw.ask(t, "beta", "/goal refactor everything budget 1500").Reply; !strings.Contains(r, "(budget 1,500 tokens)") {
		t.Errorf("/goal beta answered %q", r)
	}

	// The lanes asked nothing more: what codex did on its own is held
	// for each lane's next request (the API platform's way).
	gw.waitLogged(t, "goal.ended", "status", "complete", 1)
	gw.waitLogged(t, "goal.ended", "status", "budgetLimited", 1)
	gw.waitLogged(t, "api.notice_held", "lane", "alpha", 2) // the turn's answer, then the end
	// beta: three turns' answers (600 tokens each against 1,500) and the end.
	gw.waitLogged(t, "api.notice_held", "lane", "beta", 4)

	alpha := gw.ask(t, "alpha", "/goal")
	if !strings.HasPrefix(alpha.Reply, "Goal (met): MEET-ME make the tests pass\n") || !strings.Contains(alpha.Reply, "tokens used") {
		t.Errorf("/goal alpha after it was met answered %q", alpha.Reply)
	}
	if met := countPrefix(alpha.Notices, "Goal met: MEET-ME make the tests pass\n"); met != 1 || countPrefix(alpha.Notices, "GOAL DONE") != 1 {
		t.Errorf("alpha's notices %q, want the goal turn's answer and one goal met", alpha.Notices)
	}
	beta := gw.ask(t, "beta", "/goal")
	if !strings.HasPrefix(beta.Reply, "Goal (out of budget): refactor everything\n") {
		t.Errorf("/goal beta answered %q", beta.Reply)
	}
	// The figures, then the time taken when it was a second or more.
	if n := countPrefix(beta.Notices, "Goal stopped: out of its token budget: refactor everything\n"); n != 1 ||
		!strings.Contains(strings.Join(beta.Notices, "\n"), "tokens used of a budget of 1,500") {
		t.Errorf("beta's notices %q, want one out-of-budget notice with the figures", beta.Notices)
	}

	gw.stop()
	gw = w.start(t, gateway.Config{})
	again := gw.ask(t, "alpha", "/goal")
	if !strings.HasPrefix(again.Reply, "Goal (met): MEET-ME make the tests pass\n") || countPrefix(again.Notices, "Goal met") != 0 {
		t.Errorf("/goal after a restart answered %q with notices %q; want the met goal, not told again", again.Reply, again.Notices)
	}
	if r := gw.ask(t, "beta", "/goal off").Reply; r != "Goal cleared: Codex stops working on it." {
		t.Errorf("/goal off answered %q", r)
	}
	if r := gw.ask(t, "beta", "/goal").Reply; !strings.HasPrefix(r, "This conversation has no goal.") {
		t.Errorf("/goal after off answered %q", r)
	}
}

func countPrefix(list []string, prefix string) int {
	n := 0
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}
