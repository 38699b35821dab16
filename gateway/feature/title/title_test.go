package title

import (
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
)

func TestLaneTitle(t *testing.T) {
	long := strings.Repeat("word ", 20)
	tests := []struct {
		name string
		in   chat.Inbound
		want string
	}{
		{name: "the platform's name first", in: chat.Inbound{Title: "Release planning", Text: "hello"}, want: "Release planning"},
		{name: "else the first line", in: chat.Inbound{Text: "  Fix the login bug \nit fails on Safari"}, want: "Fix the login bug"},
		{name: "a command names nothing", in: chat.Inbound{Text: "/model beta"}},
		{name: "no text, no title", in: chat.Inbound{}},
		{name: "tabs and controls become one space", in: chat.Inbound{Title: "a\tb\x00c"}, want: "a b c"},
		{name: "a long line is cut at a word", in: chat.Inbound{Text: long}, want: strings.TrimSpace(strings.Repeat("word ", 11)) + "…"},
		{name: "a long word is cut in it", in: chat.Inbound{Text: strings.Repeat("é", 80)}, want: strings.Repeat("é", 59) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := laneTitle(tt.in)
			if got != tt.want {
				t.Errorf("laneTitle = %q, want %q", got, tt.want)
			}
			if n := len([]rune(got)); n > maxTitleRunes {
				t.Errorf("title has %d runes, want at most %d", n, maxTitleRunes)
			}
		})
	}
}

// TestOnceNamesALaneOnce: a lane is given a title until one was recorded
// with a message, then none.
func TestOnceNamesALaneOnce(t *testing.T) {
	h := exttest.NewHost(t)
	h.Register(t, New())
	in := chat.Inbound{Text: "Deploy the site"}
	if got := h.Titler.Title("k", in); got != "Deploy the site" {
		t.Fatalf("first title = %q", got)
	}
	if got := h.Titler.Title("k", in); got != "Deploy the site" {
		t.Errorf("title before it was recorded = %q, want it again", got)
	}
	h.Titler.Recorded("k", "Deploy the site")
	if got := h.Titler.Title("k", in); got != "" {
		t.Errorf("title after it was recorded = %q, want none", got)
	}
	if got := h.Titler.Title("other", in); got == "" {
		t.Error("another lane was given no title")
	}
}
