package slacktest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

func client(s *Server) *slack.Client {
	return slack.New(BotToken, slack.OptionAppLevelToken(AppToken), slack.OptionAPIURL(s.APIURL()))
}

func TestWebAPIThroughSlackGo(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	api := client(s)
	ctx := context.Background()
	auth, err := api.AuthTestContext(ctx)
	if err != nil || auth.UserID != BotUserID || auth.BotID != BotID {
		t.Fatalf("auth.test = %+v, %v", auth, err)
	}
	root := s.Post(Post{Channel: "C1", User: "U1", Text: "hi", MentionBot: true})
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionTS(root),
		slack.MsgOptionBlocks(slack.NewMarkdownBlock("", "**hi**")), slack.MsgOptionText("hi", false),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "gatewayd_part", EventPayload: map[string]any{"row": 1}}))
	if err != nil {
		t.Fatalf("postMessage: %v", err)
	}
	if got := Markdown(s.Sent("C1")[0]); got != "**hi**" {
		t.Fatalf("markdown = %q", got)
	}
	msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
		ChannelID: "C1", Timestamp: root, IncludeAllMetadata: true})
	if err != nil || len(msgs) != 2 || msgs[1].Timestamp != ts || msgs[1].Metadata.EventType != "gatewayd_part" {
		t.Fatalf("replies = %+v, %v", msgs, err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", "1.000001", slack.MsgOptionText("x", false)); !isSlackErr(err, "message_not_found") {
		t.Fatalf("update of a missing message: %v", err)
	}
	s.Inject429("chat.postMessage", 1, 1)
	_, _, err = api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != time.Second {
		t.Fatalf("429: %v", err)
	}
}

func isSlackErr(err error, code string) bool {
	var se slack.SlackErrorResponse
	return errors.As(err, &se) && se.Err == code
}

func TestFilesRoundTrip(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	api := client(s)
	ctx := context.Background()
	root := s.Post(Post{Channel: "C1", User: "U1", Text: "hi"})
	sum, err := api.UploadFileContext(ctx, slack.UploadFileParameters{Reader: strings.NewReader("abc"), FileSize: 3,
		Filename: "a.txt", Title: "a.txt", Channel: "C1", ThreadTimestamp: root})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	up := s.Uploads()
	if len(up) != 1 || up[0].FileID != sum.ID || string(up[0].Data) != "abc" || up[0].ThreadTS != root {
		t.Fatalf("uploads = %+v", up)
	}
	f := s.AddFile("b.txt", "text/plain", []byte("xyz"))
	var b strings.Builder
	if err := api.GetFileContext(ctx, f.URLPrivateDownload, &b); err != nil || b.String() != "xyz" {
		t.Fatalf("download = %q, %v", b.String(), err)
	}
}

func TestSocketModeRedeliversUntilAcked(t *testing.T) {
	s := New(Options{AckTimeout: 100 * time.Millisecond})
	defer s.Close()
	sm := socketmode.New(client(s), socketmode.OptionPingInterval(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = sm.RunContext(ctx) }()
	s.IgnoreAcks(1)
	_, eventID := s.PostEvent(Post{Channel: "D1", User: "U1", Text: "hello"})
	var attempts []int
	for len(attempts) < 2 {
		select {
		case ev := <-sm.Events:
			if ev.Type != socketmode.EventTypeEventsAPI {
				continue
			}
			api := ev.Data.(slackevents.EventsAPIEvent)
			cb := api.Data.(*slackevents.EventsAPICallbackEvent)
			if cb.EventID != eventID {
				t.Fatalf("event id %s, want %s", cb.EventID, eventID)
			}
			if me, ok := api.InnerEvent.Data.(*slackevents.MessageEvent); !ok || me.Text != "hello" {
				t.Fatalf("inner = %#v", api.InnerEvent.Data)
			}
			attempts = append(attempts, ev.Request.RetryAttempt)
			sm.Ack(*ev.Request)
		case <-time.After(10 * time.Second):
			t.Fatalf("attempts so far %v", attempts)
		}
	}
	if attempts[0] != 0 || attempts[1] != 1 {
		t.Fatalf("retry attempts %v", attempts)
	}
	if !s.WaitFor(5*time.Second, func() bool { return s.Unacked() == 0 }) {
		t.Fatalf("unacked %d", s.Unacked())
	}
	if !s.Disconnect("refresh_requested") || !s.WaitFor(5*time.Second, func() bool { return s.Opens() == 2 }) {
		t.Fatalf("no reconnect after disconnect: opens %d", s.Opens())
	}
}
