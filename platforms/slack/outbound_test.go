package slack_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
)

// partLog records parts as the outbox does.
type partLog struct {
	mu    sync.Mutex
	parts map[int]string
}

func newPartLog() *partLog { return &partLog{parts: map[int]string{}} }

func (p *partLog) RecordPart(_ context.Context, part int, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.parts[part] = id
	return nil
}

func (p *partLog) DeferLastPart(part int, id string) {
	_ = p.RecordPart(context.Background(), part, id)
}

func (p *partLog) sent() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for i := range p.parts {
		n = max(n, i+1)
	}
	out := make([]string, n)
	for i, id := range p.parts {
		out[i] = id
	}
	return out
}

// threadWithBot starts a thread lane and returns its root ts.
func threadWithBot(t *testing.T, h *harness) string {
	t.Helper()
	root := h.fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "go", MentionBot: true})
	h.sink.next(t)
	return root
}

func longText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString("Line ")
		b.WriteString(strings.Repeat("é", i%7))
		b.WriteString(" of the answer, with *emphasis* & <angle> brackets.\n")
	}
	return b.String()
}

func TestLongReplySplitRecordedAndRejoined(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := threadWithBot(t, h)
	text := longText(10000)
	log := newPartLog()
	id, err := h.a.Send(t.Context(), gateway.Outbound{ID: 7, Address: lane(root), Kind: gateway.OutReply, Text: text, Parts: log})
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent(channel)
	if len(sent) < 4 || sent[len(sent)-1].TS != id {
		t.Fatalf("%d parts, last %s, returned %s", len(sent), sent[len(sent)-1].TS, id)
	}
	var joined strings.Builder
	for i, m := range sent {
		md := slacktest.Markdown(m)
		if n := utf8.RuneCountInString(md); n > 3000 {
			t.Fatalf("part %d has %d runes", i, n)
		}
		if m.ThreadTS != root || log.sent()[i] != m.TS {
			t.Fatalf("part %d: thread %s, recorded %s", i, m.ThreadTS, log.sent()[i])
		}
		if strings.Contains(m.Text, "<angle>") || !strings.Contains(m.Text, "&lt;angle&gt;") {
			t.Fatalf("fallback text not escaped: %q", m.Text[:80])
		}
		joined.WriteString(md)
	}
	if joined.String() != strings.TrimSpace(text) && joined.String() != text {
		t.Fatalf("parts do not rejoin to the text")
	}
	// A later process resuming the row after part 1 was recorded finds
	// part 2 by its metadata (it was posted, its record lost) and posts
	// only what follows it.
	before := len(fake.Sent(channel))
	part2 := log.sent()[2]
	resumed := newPartLog()
	_, err = h.a.Send(t.Context(), gateway.Outbound{ID: 7, Address: lane(root), Kind: gateway.OutReply, Text: text,
		Parts: resumed, SentParts: log.sent()[:2]})
	if err != nil || len(fake.Sent(channel)) != before+len(sent)-3 || resumed.sent()[2] != part2 {
		t.Fatalf("resend: %v; %d new messages; part 2 %v, was %s", err, len(fake.Sent(channel))-before, resumed.sent(), part2)
	}
}

func TestLostAnswerPostsOnce(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := threadWithBot(t, h)
	out := gateway.Outbound{ID: 5, Address: lane(root), Kind: gateway.OutReply, Text: "the answer"}
	fake.LoseAnswer("chat.postMessage", 1)
	if _, err := h.a.Send(t.Context(), out); err == nil || errors.Is(err, gateway.ErrPermanent) {
		t.Fatalf("err = %v, want a transient error", err)
	}
	created := fake.Sent(channel)
	if len(created) != 1 {
		t.Fatalf("%d messages created by the lost attempt", len(created))
	}
	id, err := h.a.Send(t.Context(), out)
	if err != nil || id != created[0].TS || len(fake.Sent(channel)) != 1 {
		t.Fatalf("retry returned %s, %v; %d messages", id, err, len(fake.Sent(channel)))
	}
	out.ID = 6 // another row is another message
	if _, err := h.a.Send(t.Context(), out); err != nil || len(fake.Sent(channel)) != 2 {
		t.Fatalf("err %v, %d messages", err, len(fake.Sent(channel)))
	}
}

// A post whose answer was lost is found again in a thread longer than a
// page of history: the lookup starts at the message answered and reads
// page after page.
func TestLostPostFoundInLongThread(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := threadWithBot(t, h)
	for i := range 250 {
		fake.Post(slacktest.Post{Channel: channel, User: stranger, Text: fmt.Sprint("chatter ", i), ThreadTS: root})
	}
	out := gateway.Outbound{ID: 9, Address: lane(root), Kind: gateway.OutReply, Text: "the answer",
		InReplyTo: channel + ":" + root}
	fake.LoseAnswer("chat.postMessage", 1)
	if _, err := h.a.Send(t.Context(), out); err == nil {
		t.Fatal("the lost answer is not an error")
	}
	if _, err := h.a.Send(t.Context(), out); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.Sent(channel)); n != 1 {
		t.Fatalf("%d answers posted, want 1", n)
	}
}

func TestPreviewEditedIntoReply(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := threadWithBot(t, h)
	id, err := h.a.Send(t.Context(), gateway.Outbound{Address: lane(root), Kind: gateway.OutPreview, Text: "thinking"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.a.Edit(t.Context(), lane(root), id, "thinking harder"); err != nil {
		t.Fatal(err)
	}
	final, err := h.a.Send(t.Context(), gateway.Outbound{ID: 3, Address: lane(root), Kind: gateway.OutReply, Text: "done", EditID: id})
	if err != nil || final != id || len(fake.Sent(channel)) != 1 || len(fake.Updates()) != 2 {
		t.Fatalf("final %s (preview %s) %v; %d sent, %d updates", final, id, err, len(fake.Sent(channel)), len(fake.Updates()))
	}
	if m, _ := fake.Message(channel, id); slacktest.Markdown(m) != "done" {
		t.Fatalf("preview reads %q", slacktest.Markdown(m))
	}
	// A preview deleted meanwhile: the reply is posted anew.
	if err := h.a.Delete(t.Context(), lane(root), id); err != nil {
		t.Fatal(err)
	}
	if err := h.a.Delete(t.Context(), lane(root), id); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	again, err := h.a.Send(t.Context(), gateway.Outbound{ID: 4, Address: lane(root), Kind: gateway.OutReply, Text: "again", EditID: id})
	if err != nil || again == id {
		t.Fatalf("reply after the preview was deleted: %s %v", again, err)
	}
}

func TestPingMentionsUser(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := threadWithBot(t, h)
	if _, err := h.a.Send(t.Context(), gateway.Outbound{ID: 1, Address: lane(root), Kind: gateway.OutReply, Text: "done", Ping: allowed}); err != nil {
		t.Fatal(err)
	}
	m := fake.Sent(channel)[0]
	if !strings.HasPrefix(m.Text, "<@"+allowed+"> ") || !strings.Contains(string(m.Blocks), `\u003c@`+allowed) {
		t.Fatalf("ping missing: text %q blocks %s", m.Text, m.Blocks)
	}
}

func TestButtonsPressedByAllowedAndStranger(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := threadWithBot(t, h)
	buttons := []gateway.Button{{ID: "approve:1", Label: "Approve"}, {ID: "deny:1", Label: "Deny"}}
	id, err := h.a.SendButtons(t.Context(), gateway.Outbound{ID: 2, Address: lane(root), Kind: gateway.OutNotice, Text: "Run `rm`?"}, buttons)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fake.PressButton(channel, id, "approve:1", allowed2); err != nil {
		t.Fatal(err)
	}
	in := h.sink.next(t)
	if in.Callback != "approve:1" || in.SenderID != allowed2 || in.Address != lane(root) || in.Text != "" {
		t.Fatalf("press = %+v", in)
	}
	if _, err := fake.PressButton(channel, id, "deny:1", stranger); err != nil {
		t.Fatal(err)
	}
	// Acked at once: the refusal comes after the ack. A second refused
	// press is not answered again (nor logged); the allowed press after
	// it, handled in order, shows it was handled.
	fake.WaitFor(waitFor, func() bool { return len(fake.Ephemerals()) == 1 })
	if _, err := fake.PressButton(channel, id, "deny:1", stranger); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.PressButton(channel, id, "deny:1", allowed); err != nil {
		t.Fatal(err)
	}
	if in := h.sink.next(t); in.Callback != "deny:1" || in.SenderID != allowed {
		t.Fatalf("press = %+v", in)
	}
	h.sink.none(t, fake)
	eph := fake.Ephemerals()
	if len(eph) != 1 || eph[0].User != stranger || eph[0].ThreadTS != root {
		t.Fatalf("ephemerals = %+v", eph)
	}
	if err := h.a.EditButtons(t.Context(), lane(root), id, "Approved by bob", nil); err != nil {
		t.Fatal(err)
	}
	if m, _ := fake.Message(channel, id); len(slacktest.Buttons(m)) != 0 || slacktest.Markdown(m) != "Approved by bob" {
		t.Fatalf("after decision: %+v", m)
	}
}

func TestManyOptionsBecomeASelect(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := threadWithBot(t, h)
	var buttons []gateway.Button
	for i := range 8 {
		buttons = append(buttons, gateway.Button{ID: "q:" + string(rune('a'+i)), Label: strings.Repeat("long label ", 10)})
	}
	out := gateway.Outbound{ID: 2, Address: lane(root), Kind: gateway.OutNotice, Text: "Pick", Question: &gateway.QuestionPrompt{}}
	id, err := h.a.SendButtons(t.Context(), out, buttons)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := fake.Message(channel, id)
	if b := slacktest.Buttons(m); len(b) != 8 || !b[0].Select {
		t.Fatalf("options = %+v", b)
	}
	fake.PressButton(channel, id, "q:c", allowed)
	if in := h.sink.next(t); in.Callback != "q:c" {
		t.Fatalf("choice = %+v", in)
	}
}

func TestSlashCommands(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	envID, trigger := fake.SlashCommand(dm, allowed, "/codex", "new")
	in := h.sink.next(t)
	if in.Text != "/new" || in.Address.Kind != gateway.LaneDM || in.Address.ChatID != dm {
		t.Fatalf("dm command = %+v", in)
	}
	if !answerSays(t, fake, envID, trigger, "/new") {
		t.Fatal("no answer in the ack")
	}
	envID, trigger = fake.SlashCommand(channel, allowed, "/codex", "status")
	if !answerSays(t, fake, envID, trigger, "!status") {
		t.Fatal("a lane command in a channel is not pointed to its thread spelling")
	}
	fake.SlashCommand(channel, allowed, "/codex", "explain the outbox")
	in = h.sink.next(t)
	top := fake.Sent(channel)
	if in.Text != "explain the outbox" || in.Address.Kind != gateway.LaneThread || len(top) != 1 ||
		top[0].ThreadTS != "" || in.Address.TopicID != top[0].TS {
		t.Fatalf("channel prompt = %+v; posted %+v", in, top)
	}
	// The thread it opened is engaged: no mention needed.
	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "more", ThreadTS: top[0].TS})
	if in := h.sink.next(t); in.Text != "more" || in.Address != lane(top[0].TS) {
		t.Fatalf("in the opened thread: %+v", in)
	}
	envID, trigger = fake.SlashCommand(channel, allowed2, "/codex", "fork side quest")
	if !answerSays(t, fake, envID, trigger, "Thread opened") {
		t.Fatal("/codex fork did not open a thread")
	}
	forked := fake.Sent(channel)[len(fake.Sent(channel))-1]
	if forked.ThreadTS != "" || !strings.Contains(forked.Text, "side quest") || !strings.Contains(forked.Text, "<@"+allowed2+">") {
		t.Fatalf("fork head = %+v", forked)
	}
	fake.Post(slacktest.Post{Channel: channel, User: allowed2, Text: "in the side quest", ThreadTS: forked.TS})
	if in := h.sink.next(t); in.Address != lane(forked.TS) {
		t.Fatalf("in the forked thread: %+v", in)
	}
	fake.SlashCommand(channel, allowed, "/codex", "fork <!channel>   "+strings.Repeat("x", 300))
	if !fake.WaitFor(waitFor, func() bool { return len(fake.Sent(channel)) == 3 }) {
		t.Fatal("second fork did not open a thread")
	}
	head := fake.Sent(channel)[2].Text
	if strings.Contains(head, "<!channel>") || !strings.Contains(head, "&lt;!channel&gt; xx") || len([]rune(head)) > 220 {
		t.Fatalf("fork head not escaped and cut: %q", head)
	}
	envID, trigger = fake.SlashCommand(channel, stranger, "/codex", "hi")
	if !answerSays(t, fake, envID, trigger, "not allowed") {
		t.Fatal("stranger not refused")
	}
}

// /codex in a DM between two people is refused: the bot could not answer
// there.
func TestSlashInPeerDMRefused(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	const peer = "D9"
	fake.PeerDM(peer)
	envID, trigger := fake.SlashCommand(peer, allowed, "/codex", "explain the outbox")
	if !answerSays(t, fake, envID, trigger, "DM with the bot") {
		t.Fatalf("not refused: responses %+v", fake.Responses())
	}
	h.sink.none(t, fake)
	// The bot's own DM still works.
	envID, trigger = fake.SlashCommand(dm, allowed, "/codex", "hello")
	if in := h.sink.next(t); in.Text != "hello" || in.Address.ChatID != dm {
		t.Fatalf("bot DM = %+v", in)
	}
	if !answerSays(t, fake, envID, trigger, "Sent to Codex") {
		t.Fatal("no answer in the bot's DM")
	}
}

// answerSays waits for a slash command's answer: in its ack, or posted to
// its response_url.
func answerSays(t *testing.T, fake *slacktest.Server, envID, trigger, want string) bool {
	t.Helper()
	return fake.WaitFor(waitFor, func() bool {
		for _, a := range fake.Acks() {
			if a.EnvelopeID == envID && strings.Contains(string(a.Payload), want) {
				return true
			}
		}
		for _, r := range fake.Responses() {
			if r.TriggerID == trigger && r.ResponseType == "ephemeral" && strings.Contains(r.Text, want) {
				return true
			}
		}
		return false
	})
}

func TestOpenPlaceStartsEngagedThread(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := threadWithBot(t, h)
	addr, err := h.a.OpenPlace(t.Context(), lane(root), "try <another> way")
	if err != nil {
		t.Fatal(err)
	}
	top, ok := fake.Message(channel, addr.TopicID)
	if !ok || top.ThreadTS != "" || addr.ChatID != channel || addr.TopicID == root || !strings.Contains(top.Text, "&lt;another&gt;") {
		t.Fatalf("fork = %+v, top %+v", addr, top)
	}
	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "continue here", ThreadTS: addr.TopicID})
	if in := h.sink.next(t); in.Address != addr || in.Text != "continue here" {
		t.Fatalf("in the fork: %+v", in)
	}
	if _, err := h.a.OpenPlace(t.Context(), gateway.Address{Platform: "slack", Kind: gateway.LaneDM, ChatID: dm}, "x"); !errors.Is(err, gateway.ErrNoPlace) {
		t.Fatalf("fork in a DM: %v", err)
	}
}

func TestTypingIsThreadStatusThrottled(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := threadWithBot(t, h)
	for range 3 {
		if err := h.a.Typing(t.Context(), lane(root)); err != nil {
			t.Fatal(err)
		}
	}
	if st := fake.Statuses(); len(st) != 1 || st[0].ThreadTS != root || st[0].Status == "" {
		t.Fatalf("statuses = %+v", st)
	}
	if err := h.a.Typing(t.Context(), gateway.Address{Platform: "slack", Kind: gateway.LaneDM, ChatID: dm}); err != nil || len(fake.Statuses()) != 1 {
		t.Fatalf("dm typing: %v", err)
	}
}

func TestPermanentErrors(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	_, err := h.a.Send(t.Context(), gateway.Outbound{ID: 1, Address: lane("1.000001"), Kind: gateway.OutReply, Text: "x"})
	if !errors.Is(err, gateway.ErrPermanent) {
		t.Fatalf("unknown thread: %v", err)
	}
	_, err = h.a.Send(t.Context(), gateway.Outbound{ID: 1, Address: gateway.Address{Platform: "discord", Kind: gateway.LaneDM, ChatID: "1"}, Text: "x"})
	if !errors.Is(err, gateway.ErrPermanent) {
		t.Fatalf("foreign address: %v", err)
	}
	fake.Inject5xx("chat.postMessage", 1)
	root := threadWithBot(t, h)
	if _, err = h.a.Send(t.Context(), gateway.Outbound{ID: 2, Address: lane(root), Text: "x"}); err == nil || errors.Is(err, gateway.ErrPermanent) {
		t.Fatalf("5xx: %v, want transient", err)
	}
}
