package slack

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitAtLimit(t *testing.T) {
	text := strings.Repeat("é", 3000) + strings.Repeat("a", 10)
	parts := splitMessage(text, maxPartRunes)
	if len(parts) != 2 || utf8.RuneCountInString(parts[0]) != 3000 || strings.Join(parts, "") != text {
		t.Fatalf("parts %d", len(parts))
	}
	if got := splitMessage("short", maxPartRunes); len(got) != 1 || got[0] != "short" {
		t.Fatalf("short = %q", got)
	}
	code := "```go\n" + strings.Repeat("x := 1\n", 1000) + "```"
	for i, p := range splitMessage(code, maxPartRunes) {
		if !strings.HasPrefix(p, "```go\n") || !strings.HasSuffix(p, "```") {
			t.Fatalf("part %d does not stand alone: %q…%q", i, p[:10], p[len(p)-10:])
		}
	}
}
