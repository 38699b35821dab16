package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// TestIntegrationRerouteIsToldInTheLane: when the model server answers a
// turn as another model than the one codex asked for (its OpenAI-Model
// header), the real app-server sends model/rerouted and the lane is told
// in one line with the reply, which its work view and its transcript (the
// console's) show too; a turn answered as asked says nothing.
func TestIntegrationRerouteIsToldInTheLane(t *testing.T) {
	w := newWorld(t)
	w.model.Respond(func(req codextest.Request) codextest.Reply {
		reply := codextest.DefaultReply(req)
		if strings.Contains(req.LastUserText(), "sensitive") {
			reply.Headers = map[string]string{"OpenAI-Model": "gpt-safer"}
		}
		return reply
	})
	gw := w.start(t, gateway.Config{})

	r := gw.ask(t, "alpha", "a sensitive question")
	want := "Answered by gpt-safer instead of " + codextest.ModelName + ": the request was flagged as high-risk cyber activity."
	if !containsLine(r.Notices, want) {
		t.Errorf("a rerouted turn's notices %q, want %q among them", r.Notices, want)
	}
	if r.Progress == nil || r.Progress.Model != want {
		t.Errorf("a rerouted turn's work view %+v, want the line in it", r.Progress)
	}
	msgs, err := gw.st.Transcript(context.Background(), "v1:api:alpha", 20)
	if err != nil {
		t.Fatal(err)
	}
	noted := false
	for _, m := range msgs {
		noted = noted || (m.Role == store.RoleNotice && containsLine([]string{m.Text}, want))
	}
	if !noted {
		t.Errorf("the lane's transcript %+v lacks the reroute line", msgs)
	}
	if !strings.Contains(r.Reply, "ECHO: a sensitive question") {
		t.Errorf("the rerouted turn answered %q, want the model's answer", r.Reply)
	}

	if r := gw.ask(t, "alpha", "a plain question"); containsPrefix(r.Notices, "Answered by") {
		t.Errorf("a turn answered as asked told %q", r.Notices)
	}
}

func containsLine(notices []string, line string) bool {
	for _, n := range notices {
		for _, l := range strings.Split(n, "\n") {
			if l == line {
				return true
			}
		}
	}
	return false
}

func containsPrefix(notices []string, prefix string) bool {
	for _, n := range notices {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}
