package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

var topic42 = gateway.Address{Platform: "telegram", Kind: gateway.LaneTopic, ChatID: "-1001", TopicID: "42"}

// sendHarness is an adapter that is only used for sending (no polling).
func sendHarness(t *testing.T) (*harness, *Adapter) {
	h := newHarness(t)
	h.srv.Chat(forum)
	h.srv.Topic(forum.ID, 42)
	a, err := New(h.config(t))
	if err != nil {
		t.Fatal(err)
	}
	return h, a
}

// longReply is ~10,000 characters of numbered lines with a code block that
// crosses the first 4096 boundary and emoji (surrogate pairs) everywhere.
func longReply() string {
	var b strings.Builder
	for i := 0; b.Len() < 10000; i++ {
		if i == 100 {
			b.WriteString("```go\n")
		}
		fmt.Fprintf(&b, "line %04d 😀 <tag> & text\n", i)
		if i == 200 {
			b.WriteString("```\n")
		}
	}
	return b.String()
}

func TestLongReplyArrivesInOrderAndSplitCorrectly(t *testing.T) {
	h, a := sendHarness(t)
	text := longReply()
	if _, err := a.Send(context.Background(), gateway.Outbound{Address: topic42, Text: text}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := h.srv.Messages(forum.ID, 42)
	if len(msgs) < 3 {
		t.Fatalf("got %d messages, want at least 3", len(msgs))
	}
	var visible strings.Builder
	preChunks := 0
	for i, m := range msgs {
		if n := utf16Len(m.Text); n > MaxMessageUnits {
			t.Fatalf("message %d has %d units", i, n)
		}
		if m.ParseMode != "HTML" {
			t.Fatalf("message %d parse mode %q; the HTML rendering should have been accepted", i, m.ParseMode)
		}
		if strings.Contains(m.Raw, "<pre>") {
			preChunks++
		}
		visible.WriteString(m.Text + "\n")
	}
	if preChunks < 2 {
		t.Fatalf("the code block spans the boundary, so at least 2 messages need <pre>; got %d", preChunks)
	}
	// Every source line arrives exactly once, in order.
	got := visible.String()
	last := -1
	for i := 0; ; i++ {
		line := fmt.Sprintf("line %04d 😀 <tag> & text", i)
		if !strings.Contains(text, line) {
			break
		}
		at := strings.Index(got, line)
		if at < 0 || at < last || strings.Count(got, line) != 1 {
			t.Fatalf("line %d missing, duplicated or out of order", i)
		}
		last = at
	}
}

func TestReplyWithRejectedEntitiesStillArrives(t *testing.T) {
	h, a := sendHarness(t)
	h.srv.RejectEntities(true)
	text := "Here *is* `code` and <b>not html</b> & more"
	if _, err := a.Send(context.Background(), gateway.Outbound{Address: topic42, Text: text}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := h.srv.Messages(forum.ID, 42)
	if len(msgs) != 1 || msgs[0].ParseMode != "" || msgs[0].Text != text {
		t.Fatalf("messages = %+v; want the text once, as plain text", msgs)
	}
}

func TestHTMLRenderingIsAcceptedByTheParser(t *testing.T) {
	h, a := sendHarness(t)
	tests := []struct {
		name, text, visible string
	}{
		{name: "markup characters", text: "a <script> & b", visible: "a <script> & b"},
		{name: "inline code", text: "run `rm -rf <dir>` now", visible: "run rm -rf <dir> now"},
		{name: "unpaired backtick", text: "it`s fine", visible: "it`s fine"},
		{name: "empty span", text: "a `` b", visible: "a `` b"},
		{name: "code block", text: "see\n```python\nif a < b: pass\n```\ndone", visible: "see\nif a < b: pass\ndone"},
		{name: "unclosed code block", text: "```\nx & y", visible: "x & y"},
		{name: "weird language", text: "```<b>\nx\n```", visible: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(h.srv.Messages(forum.ID, 42))
			if _, err := a.Send(context.Background(), gateway.Outbound{Address: topic42, Text: tt.text}); err != nil {
				t.Fatalf("Send: %v", err)
			}
			m := h.srv.Messages(forum.ID, 42)[before]
			if m.ParseMode != "HTML" || m.Text != tt.visible {
				t.Fatalf("sent %q (%s) visible %q; want HTML showing %q", m.Raw, m.ParseMode, m.Text, tt.visible)
			}
		})
	}
}

func TestSendErrors(t *testing.T) {
	tests := []struct {
		name      string
		addr      gateway.Address
		fail      *telegramtest.Failure
		permanent bool
		retry     time.Duration
	}{
		{name: "429 honours retry_after", addr: topic42, fail: &telegramtest.Failure{Code: 429, Description: "Too Many Requests: retry after 7", RetryAfter: 7}, retry: 7 * time.Second},
		{name: "chat not found", addr: gateway.Address{Platform: "telegram", Kind: gateway.LaneGroup, ChatID: "-777"}, permanent: true},
		{name: "thread not found", addr: gateway.Address{Platform: "telegram", Kind: gateway.LaneTopic, ChatID: "-1001", TopicID: "99"}, permanent: true},
		{name: "forbidden", addr: topic42, fail: &telegramtest.Failure{Code: 403, Description: "Forbidden: bot was kicked from the supergroup chat"}, permanent: true},
		{name: "server error", addr: topic42, fail: &telegramtest.Failure{Code: 502, Description: "Bad Gateway"}},
		{name: "malformed address", addr: gateway.Address{Platform: "telegram", Kind: gateway.LaneGroup, ChatID: "abc"}, permanent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, a := sendHarness(t)
			if tt.fail != nil {
				h.srv.Fail("sendMessage", *tt.fail)
			}
			_, err := a.Send(context.Background(), gateway.Outbound{Address: tt.addr, Text: "hi"})
			if err == nil {
				t.Fatal("Send succeeded")
			}
			if got := errors.Is(err, gateway.ErrPermanent); got != tt.permanent {
				t.Fatalf("permanent = %v, want %v (%v)", got, tt.permanent, err)
			}
			var ra *gateway.RetryAfterError
			if got := errors.As(err, &ra); got != (tt.retry > 0) || (got && ra.After != tt.retry) {
				t.Fatalf("retry-after error = %v (%v), want %v", got, err, tt.retry)
			}
			if strings.Contains(err.Error(), "TEST-token") {
				t.Fatalf("error leaks the token: %v", err)
			}
			if tt.fail != nil {
				if _, err := a.Send(context.Background(), gateway.Outbound{Address: tt.addr, Text: "hi"}); err != nil {
					t.Fatalf("Send after the failure: %v", err)
				}
			}
		})
	}
}

// A retry of an outbox row skips the chunks its parts log recorded: they
// reached Telegram already, whatever the retry is labelled. When the first
// chunk replaced a preview, the retry does not touch the preview again.
func TestRetryAfterPartialSendDoesNotRepeatChunks(t *testing.T) {
	tests := []struct {
		name         string
		first, retry gateway.OutKind
		preview      bool
	}{
		{name: "same kind", first: gateway.OutReply, retry: gateway.OutReply},
		{name: "retry labelled differently", first: gateway.OutReply, retry: gateway.OutNotice},
		{name: "first chunk edited the preview", first: gateway.OutReply, retry: gateway.OutReply, preview: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, a := sendHarness(t)
			ctx := context.Background()
			out := gateway.Outbound{Address: topic42, Kind: tt.first, Text: longReply()}
			if tt.preview {
				id, err := a.Send(ctx, gateway.Outbound{Address: topic42, Kind: gateway.OutPreview, Text: "draft"})
				if err != nil {
					t.Fatal(err)
				}
				out.EditID = id
			}
			before := len(h.srv.Messages(forum.ID, 42))
			parts := &gatewaytest.Parts{}
			h.srv.Fail("sendMessage", telegramtest.Failure{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1, Skip: btoi(!tt.preview)})
			_, err := a.Send(ctx, parts.Row(out, 7))
			var ra *gateway.RetryAfterError
			if !errors.As(err, &ra) {
				t.Fatalf("Send = %v, want a RetryAfterError on the second chunk", err)
			}
			if n := len(parts.Sent()); n != 1 {
				t.Fatalf("%d chunks recorded before the retry, want 1", n)
			}
			edits := func() int { return h.srv.Messages(forum.ID, 42)[0].Edits }
			editsBefore := edits()
			out.Kind = tt.retry
			last, err := a.Send(ctx, parts.Row(out, 7))
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			want := len(SplitMessage(out.Text, MaxMessageUnits))
			msgs := h.srv.Messages(forum.ID, 42)
			if n := len(msgs) - before + btoi(tt.preview); n != want {
				t.Fatalf("%d messages after the retry, want %d (no chunk twice)", n, want)
			}
			if edits() != editsBefore {
				t.Errorf("the retry edited the first message again")
			}
			if sent := parts.Sent(); len(sent) != want || last != sent[want-1] {
				t.Errorf("recorded %v, returned %s; want every chunk recorded and the last returned", sent, last)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestEdit(t *testing.T) {
	h, a := sendHarness(t)
	ctx := context.Background()
	id, err := a.Send(ctx, gateway.Outbound{Address: topic42, Text: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	edits := func() int { return h.srv.Messages(forum.ID, 42)[0].Edits }

	steps := []struct {
		name  string
		text  string
		edits int
	}{
		{name: "unchanged text is skipped", text: "draft", edits: 0},
		{name: "new text is edited", text: "draft, longer", edits: 1},
		{name: "same again is skipped", text: "draft, longer", edits: 1},
	}
	for _, st := range steps {
		if err := a.Edit(ctx, topic42, id, st.text); err != nil {
			t.Fatalf("%s: Edit: %v", st.name, err)
		}
		if got := edits(); got != st.edits {
			t.Fatalf("%s: edits = %d, want %d", st.name, got, st.edits)
		}
	}
	// A fresh adapter has no cache: Telegram's "message is not modified"
	// must still count as success.
	b, err := New(h.config(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Edit(ctx, topic42, id, "draft, longer"); err != nil {
		t.Fatalf("not-modified edit: %v", err)
	}
	// Send with EditID finalises the preview and sends the rest.
	final := longReply()
	last, err := a.Send(ctx, gateway.Outbound{Address: topic42, Text: final, EditID: id})
	if err != nil {
		t.Fatalf("final Send: %v", err)
	}
	msgs := h.srv.Messages(forum.ID, 42)
	if want := len(SplitMessage(final, MaxMessageUnits)); len(msgs) != want {
		t.Fatalf("%d messages, want the preview plus %d new", len(msgs), want-1)
	}
	if last != messageID(forum.ID, msgs[len(msgs)-1].ID) || !strings.HasPrefix(msgs[0].Text, "line 0000") {
		t.Fatalf("last id %s, first message %q", last, msgs[0].Text[:20])
	}
}

func TestEmptyMessageIsPermanent(t *testing.T) {
	_, a := sendHarness(t)
	_, err := a.Send(context.Background(), gateway.Outbound{Address: topic42, Text: " \n "})
	if !errors.Is(err, gateway.ErrPermanent) {
		t.Fatalf("Send(blank) = %v, want ErrPermanent", err)
	}
}

func TestLongPreviewIsOneMessageAndTheFinalReplySplits(t *testing.T) {
	h, a := sendHarness(t)
	ctx := context.Background()
	text := longReply()
	upTo := func(n int) string { return text[:strings.LastIndexByte(text[:n], '\n')] } // whole lines
	id, err := a.Send(ctx, gateway.Outbound{Address: topic42, Kind: gateway.OutPreview, Text: upTo(6000)})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	if n := len(h.srv.Messages(forum.ID, 42)); n != 1 {
		t.Fatalf("preview sent %d messages, want 1", n)
	}
	if err := a.Edit(ctx, topic42, id, upTo(8000)); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	if _, err := a.Send(ctx, gateway.Outbound{Address: topic42, Kind: gateway.OutReply, Text: text, EditID: id}); err != nil {
		t.Fatalf("final: %v", err)
	}
	msgs := h.srv.Messages(forum.ID, 42)
	chunks := SplitMessage(text, MaxMessageUnits)
	if len(msgs) != len(chunks) {
		t.Fatalf("%d messages, want %d (the preview becomes the first chunk)", len(msgs), len(chunks))
	}
	for i, m := range msgs {
		if first := strings.SplitN(stripAddedFences(chunks[i]), "\n", 2)[0]; !strings.HasPrefix(m.Text, first) {
			t.Fatalf("message %d starts %q, want %q", i, m.Text[:30], first)
		}
	}
}

func TestSendAfterCancelSendsNothing(t *testing.T) {
	h, a := sendHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Send(ctx, gateway.Outbound{Address: topic42, Text: "too late"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v, want context.Canceled", err)
	}
	if n := len(h.srv.AllMessages()); n != 0 {
		t.Fatalf("%d messages sent after cancel", n)
	}
}

// Delete removes the message; a message already gone counts as deleted.
func TestDelete(t *testing.T) {
	h, a := sendHarness(t)
	ctx := context.Background()
	id, err := a.Send(ctx, gateway.Outbound{Address: topic42, Text: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := a.Delete(ctx, topic42, id); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if got := h.srv.Messages(forum.ID, 42); len(got) != 0 {
		t.Errorf("messages after delete = %+v, want none", got)
	}
	if d := h.srv.Deleted(); len(d) != 1 || d[0].Text != "draft" {
		t.Errorf("deleted = %+v, want the draft once", d)
	}
	if err := a.Delete(ctx, topic42, "not-a-number"); !errors.Is(err, gateway.ErrPermanent) {
		t.Errorf("Delete(bad id) = %v, want ErrPermanent", err)
	}
}

// deferringParts is a PartLog that, like the outbox's, takes the last
// part's record for the sent mark.
type deferringParts struct {
	gatewaytest.Parts
	last   int
	lastID string
}

func (p *deferringParts) DeferLastPart(part int, platformMessageID string) {
	p.last, p.lastID = part, platformMessageID
}

// Every chunk but the last is recorded at once; the last, whose id Send
// returns, is left to the outbox's sent mark.
func TestSendDefersTheLastChunksRecord(t *testing.T) {
	tests := []struct {
		name string
		text string
	}{
		{name: "one chunk", text: "short"},
		{name: "several chunks", text: longReply()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, a := sendHarness(t)
			parts := &deferringParts{}
			out := gateway.Outbound{Address: topic42, Kind: gateway.OutReply, Text: tt.text, ID: 7, Parts: parts}
			last, err := a.Send(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			n := len(SplitMessage(tt.text, MaxMessageUnits))
			if got := len(parts.Sent()); got != n-1 {
				t.Errorf("%d chunks recorded at once, want %d", got, n-1)
			}
			if parts.last != n-1 || parts.lastID != last {
				t.Errorf("deferred part %d %q, want part %d %q (Send's result)", parts.last, parts.lastID, n-1, last)
			}
		})
	}
}
