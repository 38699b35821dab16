package gateway

import (
	"context"
	"strings"
	"testing"
)

// The first message that gives a title names the lane, and the title is
// kept: a command before it gives none, a later message does not replace it.
func TestDeliverNamesTheLaneOnce(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.ask(t, "m1", "/status")
	if title := h.st.lane(laneA).Meta["title"]; title != "" {
		t.Errorf("title after a command = %q, want none", title)
	}
	h.ask(t, "m2", "Deploy the site\nto staging first")
	h.ask(t, "m3", "something else entirely")
	if title := h.st.lane(laneA).Meta["title"]; title != "Deploy the site" {
		t.Errorf("title = %q, want the first message's first line", title)
	}

	named := Address{Platform: "test", Kind: LaneAPI, ChatID: "named"}
	if _, err := h.g.Deliver(context.Background(), Inbound{Address: named, MessageID: "n1", SenderID: "u1",
		Text: "hi", Title: "Ops room"}); err != nil {
		t.Fatal(err)
	}
	if title := h.st.lane(named.SessionKey()).Meta["title"]; title != "Ops room" {
		t.Errorf("title = %q, want the platform's name", title)
	}
}

// Once a lane has a title, its later messages ask the store for none: the
// store would read the lane's meta only to keep the title it has.
func TestNamedLanePassesNoTitleAgain(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.ask(t, "m1", "Deploy the site")
	h.ask(t, "m2", "and then the docs")
	h.st.mu.Lock()
	var titles []string
	for _, row := range h.st.inbound {
		titles = append(titles, row.LaneTitle)
	}
	h.st.mu.Unlock()
	if strings.Join(titles, "|") != "Deploy the site|" {
		t.Errorf("titles passed with the messages %q, want the first message's, then none", titles)
	}
	if title := h.st.lane(laneA).Meta["title"]; title != "Deploy the site" {
		t.Errorf("title = %q, want the first message's", title)
	}
}
