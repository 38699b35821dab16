package slack_test

import (
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
)

func TestMentionStartsThreadLaneAndThreadNeedsNoMention(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "fix the build", MentionBot: true})
	in := h.sink.next(t)
	if in.Address != lane(root) || in.Text != "fix the build" || !in.Mentioned || in.MessageID != channel+":"+root {
		t.Fatalf("first = %+v", in)
	}
	if in.Address.SessionKey() != "v1:slack:thread:C1:"+root {
		t.Fatalf("key = %s", in.Address.SessionKey())
	}
	if in.SenderName != "ann" || in.DisplayName != "annie" {
		t.Fatalf("names = %q %q", in.SenderName, in.DisplayName)
	}
	reply := fake.Post(slacktest.Post{Channel: channel, User: allowed2, Text: "and the tests &amp; docs", ThreadTS: root})
	in = h.sink.next(t)
	if in.Address != lane(root) || in.Mentioned || in.Ambient || in.Text != "and the tests & docs" || in.MessageID != channel+":"+reply {
		t.Fatalf("thread reply = %+v", in)
	}
	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "chatter, not for the bot"})
	fake.Post(slacktest.Post{Channel: channel, User: stranger, Text: "let me in", ThreadTS: root})
	fake.Post(slacktest.Post{Channel: channel, User: stranger, Text: "me too", MentionBot: true})
	h.sink.none(t, fake)
}

func TestCommandsAfterOptionalMention(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "hello", MentionBot: true})
	h.sink.next(t)
	for _, tt := range []struct{ text, want string }{
		{"!new", "/new"},
		{"<@UBOT> !status now", "/status now"},
		{"/help", "/help"},
		{"!shrug not a command", "!shrug not a command"},
	} {
		fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: tt.text, ThreadTS: root})
		if in := h.sink.next(t); in.Text != tt.want {
			t.Fatalf("%q delivered as %q, want %q", tt.text, in.Text, tt.want)
		}
	}
}

func TestDMIsALane(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	fake.Post(slacktest.Post{Channel: dm, User: allowed, Text: "hi"})
	in := h.sink.next(t)
	want := gateway.Address{Platform: "slack", Kind: gateway.LaneDM, ChatID: dm}
	if in.Address != want || !in.Mentioned || in.Address.SessionKey() != "v1:slack:dm:D1" {
		t.Fatalf("dm = %+v", in)
	}
	fake.Post(slacktest.Post{Channel: "D9", User: stranger, Text: "hi"})
	h.sink.none(t, fake)
}

func TestAllowedChannels(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	h.a.SetAllowlist([]string{allowed}, []string{"C2"})
	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "here?", MentionBot: true})
	h.sink.none(t, fake)
	ts := fake.Post(slacktest.Post{Channel: "C2", User: allowed, Text: "here", MentionBot: true})
	if in := h.sink.next(t); in.Address.ChatID != "C2" || in.Address.TopicID != ts {
		t.Fatalf("in = %+v", in)
	}
}

func TestOwnPostsIgnored(t *testing.T) {
	fake := newFake(t)
	fake.SetEcho(true)
	h := start(t, fake, newMemCursor())
	root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "hi", MentionBot: true})
	in := h.sink.next(t)
	id, err := h.a.Send(t.Context(), gateway.Outbound{Address: in.Address, Kind: gateway.OutReply, Text: "hello back"})
	if err != nil || id == "" {
		t.Fatalf("Send: %q %v", id, err)
	}
	if err := h.a.Edit(t.Context(), in.Address, id, "hello again"); err != nil {
		t.Fatal(err)
	}
	if !fake.WaitFor(waitFor, func() bool { return len(fake.Acks()) >= 3 }) {
		t.Fatal("echoes not acked")
	}
	h.sink.none(t, fake)
	_ = root
}

func TestEditOfAddressedMessage(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "fix it", MentionBot: true})
	h.sink.next(t)
	if err := fake.EditPost(channel, root, "<@UBOT> fix it properly"); err != nil {
		t.Fatal(err)
	}
	in := h.sink.next(t)
	if !in.Edited || in.Text != "fix it properly" || in.MessageID != channel+":"+root {
		t.Fatalf("edit = %+v", in)
	}
}

// An edit the gateway failed to take is left unacked: Slack redelivers
// it, and the retry reaches the gateway.
func TestFailedEditRedelivered(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	fake.Post(slacktest.Post{Channel: dm, User: allowed, Text: "fix it"})
	ts := h.sink.next(t).MessageID[len(dm)+1:]
	h.sink.mu.Lock()
	h.sink.fails = 1
	h.sink.mu.Unlock()
	if err := fake.EditPost(dm, ts, "fix it properly"); err != nil {
		t.Fatal(err)
	}
	if in := h.sink.next(t); !in.Edited || in.Text != "fix it properly" {
		t.Fatalf("edit = %+v", in)
	}
}

func TestFileReachesGateway(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	f := fake.AddFile("shot.png", "image/png", []byte("PNGDATA"))
	fake.Post(slacktest.Post{Channel: dm, User: allowed, Files: []slacktest.File{f}})
	in := h.sink.next(t)
	if len(in.Attachments) != 1 || in.Attachments[0].Name != "shot.png" || in.Attachments[0].MIME != "image/png" {
		t.Fatalf("attachments = %+v", in.Attachments)
	}
	rc, err := in.Attachments[0].Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, 64)
	n, _ := rc.Read(buf)
	if string(buf[:n]) != "PNGDATA" || fake.Downloads() != 1 {
		t.Fatalf("downloaded %q (%d downloads)", buf[:n], fake.Downloads())
	}
}
