package slack

import "testing"

func TestToMrkdwn(t *testing.T) {
	tests := []struct{ name, md, want string }{
		{"escape", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"no pings from agent text", "<!channel> <@U1>", "&lt;!channel&gt; &lt;@U1&gt;"},
		{"bold", "**bold** and __also__", "*bold* and *also*"},
		{"italic", "*it* and _it_", "_it_ and _it_"},
		{"bold then italic", "**b** *i*", "*b* _i_"},
		{"strike", "~~gone~~", "~gone~"},
		{"inline code kept", "run `a < b` **now**", "run `a &lt; b` *now*"},
		{"link", "see [the docs](https://x.io/a_b)", "see <https://x.io/a_b|the docs>"},
		{"link with pipe", "[a|b](https://x.io)", "<https://x.io>"},
		{"no ping from link to !channel", "[x](!channel)", "[x](!channel)"},
		{"no ping from link to @user", "[b](@U0ADMIN)", "[b](@U0ADMIN)"},
		{"no mention from link to #channel", "[c](#C1)", "[c](#C1)"},
		{"no ping from image", "![x](!here)", "![x](!here)"},
		{"no ping from subteam", "[t](!subteam^S1)", "[t](!subteam^S1)"},
		{"no link to other scheme", "[x](javascript:alert)", "[x](javascript:alert)"},
		{"no pipe in url", "[x](https://a|!channel)", "[x](https://a|!channel)"},
		{"mailto link", "[me](mailto:a@b.c)", "<mailto:a@b.c|me>"},
		{"scheme case", "[x](HTTP://x.io)", "<HTTP://x.io|x>"},
		{"image", "![chart](https://x.io/c.png)", "<https://x.io/c.png|chart>"},
		{"autolink", "<https://x.io>", "<https://x.io>"},
		{"heading", "## Plan ##", "*Plan*"},
		{"bullets", "- one\n  * two", "• one\n  • two"},
		{"numbered stays", "1. one", "1. one"},
		{"quote", "> quoted **x**", "> quoted *x*"},
		{"rule", "---", "───────────"},
		{"fence drops lang", "```go\nx := a < b\n**y**\n```", "```\nx := a &lt; b\n**y**\n```"},
		{"unclosed fence closed", "```\ncode", "```\ncode\n```"},
		{"table in code", "| a | b |\n|---|---|\n| 1 | 2 |\nafter", "```\n| a | b |\n|---|---|\n| 1 | 2 |\n```\nafter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := toMrkdwn(tt.md); got != tt.want {
				t.Fatalf("toMrkdwn(%q)\n got %q\nwant %q", tt.md, got, tt.want)
			}
		})
	}
}

func TestFallbackTextIsShortAndPings(t *testing.T) {
	long := ""
	for range 500 {
		long += "word "
	}
	got := fallbackText(long, "U1")
	if r := []rune(got); len(r) > maxFallbackRunes+len("<@U1> ") || string(r[len(r)-1]) != "…" {
		t.Fatalf("fallback = %d runes", len(r))
	}
	if got[:6] != "<@U1> " {
		t.Fatalf("no ping: %q", got[:10])
	}
}
