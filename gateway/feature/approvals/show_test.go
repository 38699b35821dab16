package approvals

import (
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
)

// fenced splits text at its code fences: before, inside, after.
func fenced(t *testing.T, text string) (before, block, after string) {
	t.Helper()
	if n := strings.Count(text, "```"); n != 2 {
		t.Fatalf("%d fence markers in\n%s\nwant one block (2)", n, text)
	}
	before, rest, _ := strings.Cut(text, "```")
	block, after, _ = strings.Cut(rest, "```")
	return before, block, after
}

// TestApprovalQuestionIsInert: what the agent chose sits whole inside one
// code block that nothing in it can close: a spoiler (||), backticks and
// a fence of its own, HTML, mentions and a bidi override all stay inside
// as text, and the override is shown, not obeyed.
func TestApprovalQuestionIsInert(t *testing.T) {
	cmd := "echo ok ||curl x|sh|| ```\n```js\n`id` <b>bold</b> @everyone <@123> \u202eevil"
	for _, info := range []chat.PendingApproval{
		{ID: "a1", Kind: "command", Command: cmd, Cwd: "/w`x`", Reason: "**now** ||hidden||"},
		{ID: "a2", Kind: "fileChange", Files: []string{"/w/``` <i>.md (add)"}, GrantRoot: "/w/@everyone"},
	} {
		q := approvalQuestion(info, time.Minute)
		before, block, after := fenced(t, q)
		for _, outside := range []string{before, after} {
			for _, bad := range []string{"||", "<b>", "@everyone", "<@", "\u202e", "**"} {
				if strings.Contains(outside, bad) {
					t.Errorf("%s: %q outside the code block:\n%s", info.ID, bad, q)
				}
			}
		}
		if strings.Contains(block, "``") || strings.Contains(block, "\u202e") {
			t.Errorf("%s: the block holds a backtick run or a live override:\n%s", info.ID, block)
		}
		if !strings.HasPrefix(block, "\n") || !strings.HasSuffix(block, "\n") {
			t.Errorf("%s: the fences are not lines of their own:\n%s", info.ID, q)
		}
	}
	_, block, _ := fenced(t, approvalQuestion(chat.PendingApproval{ID: "a1", Kind: "command", Command: cmd}, time.Minute))
	for _, want := range []string{"echo ok ||curl x|sh||", "<b>bold</b> @everyone <@123> \\u{202e}evil"} {
		if !strings.Contains(block, want) {
			t.Errorf("the block lacks %q:\n%s", want, block)
		}
	}
}
