package telegram

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

var (
	aliceLane = gateway.Address{Platform: "telegram", Kind: gateway.LaneDM, ChatID: "1001"}
	groupLane = gateway.Address{Platform: "telegram", Kind: gateway.LaneGroup, ChatID: "-2002"}
)

// draftHarness is a sending adapter with draft streaming on, and the
// fake knowing alice's private chat, the group and forum topic 42.
func draftHarness(t *testing.T) (*harness, *Adapter) {
	t.Helper()
	h := newHarness(t)
	h.srv.Chat(aliceDM)
	h.srv.Chat(group)
	h.srv.Chat(forum)
	h.srv.Topic(forum.ID, 42)
	cfg := h.config(t)
	cfg.DraftStreaming = true
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h, a
}

// streamTurn does what the gateway does with one turn: the preview posted
// and edited with each version, then the reply sent through the outbox
// with the preview's id as EditID. It returns the preview's id.
func streamTurn(t *testing.T, a *Adapter, addr gateway.Address, versions []string, reply string) string {
	t.Helper()
	ctx := context.Background()
	pid, err := a.Send(ctx, gateway.Outbound{Address: addr, Kind: gateway.OutPreview, Text: versions[0], ReplyTo: "7"})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	for _, v := range versions[1:] {
		if err := a.Edit(ctx, addr, pid, v); err != nil {
			t.Fatalf("Edit(%q): %v", v, err)
		}
	}
	parts := &gatewaytest.Parts{}
	out := gateway.Outbound{Address: addr, Kind: gateway.OutReply, Text: reply, ReplyTo: "7", EditID: pid}
	if _, err := a.Send(ctx, parts.Row(out, 1)); err != nil {
		t.Fatalf("reply: %v", err)
	}
	return pid
}

func TestDraftStreamsAPrivateChatsPreview(t *testing.T) {
	h, a := draftHarness(t)
	versions := []string{"Hel", "Hello <wor", "Hello <world>"}
	pid := streamTurn(t, a, aliceLane, versions, "Hello <world>!")

	if !strings.HasPrefix(pid, draftIDPrefix) {
		t.Fatalf("preview id %q names no draft", pid)
	}
	drafts := h.srv.Drafts(aliceDM.ID)
	if len(drafts) != 1 || !slices.Equal(drafts[0].Versions, versions) {
		t.Fatalf("drafts = %+v, want one streamed with %q", drafts, versions)
	}
	if !drafts[0].Ended {
		t.Errorf("the draft is still shown after the reply was sent")
	}
	msgs := h.srv.Messages(aliceDM.ID, -1)
	if len(msgs) != 1 || msgs[0].Text != "Hello <world>!" || msgs[0].ReplyTo != 7 || msgs[0].Edits != 0 {
		t.Fatalf("messages = %+v, want the reply once, replying to 7, never edited", msgs)
	}
	if n := h.srv.Calls("editMessageText"); n != 0 {
		t.Errorf("%d editMessageText calls, want none", n)
	}
	// The next turn's draft is a new one: its first text does not animate
	// out of the last turn's.
	streamTurn(t, a, aliceLane, []string{"again"}, "again!")
	if d := h.srv.Drafts(aliceDM.ID); len(d) != 2 || d[1].DraftID == d[0].DraftID {
		t.Errorf("second turn's drafts = %+v, want a new draft id", d)
	}
}

func TestDraftRefusedFallsBackToEdits(t *testing.T) {
	versions := []string{"one", "one two", "one two three"}
	const reply = "one two three four"
	tests := []struct {
		name   string
		refuse func(srv *telegramtest.Server)
		// draftVersions are what the draft showed before it was refused.
		draftVersions []string
		// shown are the texts the preview message had, the reply last.
		shown []string
	}{
		{
			name:   "server without sendMessageDraft",
			refuse: func(srv *telegramtest.Server) { srv.RefuseDrafts(true) },
			shown:  append(slices.Clone(versions), reply),
		},
		{
			name: "chat refuses drafts",
			refuse: func(srv *telegramtest.Server) {
				srv.Fail("sendMessageDraft", telegramtest.Failure{Code: 400, Description: "Bad Request: TEXTDRAFT_PEER_INVALID"})
			},
			shown: append(slices.Clone(versions), reply),
		},
		{
			name: "refused mid-stream",
			refuse: func(srv *telegramtest.Server) {
				srv.Fail("sendMessageDraft", telegramtest.Failure{Code: 400, Description: "Bad Request: TEXTDRAFT_PEER_INVALID", Skip: 1})
			},
			draftVersions: versions[:1],
			shown:         append(slices.Clone(versions[1:]), reply),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, a := draftHarness(t)
			tt.refuse(h.srv)
			streamTurn(t, a, aliceLane, versions, reply)

			var drafted []string
			for _, d := range h.srv.Drafts(aliceDM.ID) {
				drafted = append(drafted, d.Versions...)
			}
			if !slices.Equal(drafted, tt.draftVersions) {
				t.Errorf("drafts showed %q, want %q", drafted, tt.draftVersions)
			}
			msgs := h.srv.Messages(aliceDM.ID, -1)
			if len(msgs) != 1 || !slices.Equal(msgs[0].Versions, tt.shown) || msgs[0].ReplyTo != 7 {
				t.Fatalf("messages = %+v, want one preview message replying to 7 showing %q (the reply once)", msgs, tt.shown)
			}
			// Remembered: the next turn streams with edits without asking.
			calls := h.srv.Calls("sendMessageDraft")
			streamTurn(t, a, aliceLane, []string{"next", "next turn"}, "next turn done")
			if n := h.srv.Calls("sendMessageDraft"); n != calls {
				t.Errorf("sendMessageDraft asked again after the refusal (%d calls, then %d)", calls, n)
			}
			if msgs := h.srv.Messages(aliceDM.ID, -1); len(msgs) != 2 || msgs[1].Text != "next turn done" || msgs[1].Edits != 2 {
				t.Errorf("next turn's messages = %+v, want its preview edited into its reply", msgs)
			}
		})
	}
}

func TestDraftsOnlyInPrivateChats(t *testing.T) {
	tests := []struct {
		name     string
		addr     gateway.Address
		chat     int64
		thread   int
		draftsOn bool
	}{
		{name: "group", addr: groupLane, chat: group.ID, thread: -1, draftsOn: true},
		{name: "forum topic", addr: topic42, chat: forum.ID, thread: 42, draftsOn: true},
		{name: "private chat, drafts off", addr: aliceLane, chat: aliceDM.ID, thread: -1, draftsOn: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, a := draftHarness(t)
			a.cfg.DraftStreaming = tt.draftsOn
			streamTurn(t, a, tt.addr, []string{"a", "a b"}, "a b c")
			if n := h.srv.Calls("sendMessageDraft"); n != 0 {
				t.Errorf("%d sendMessageDraft calls, want none", n)
			}
			if msgs := h.srv.Messages(tt.chat, tt.thread); len(msgs) != 1 || !slices.Equal(msgs[0].Versions, []string{"a", "a b", "a b c"}) {
				t.Errorf("messages = %+v, want the preview edited into the reply", msgs)
			}
		})
	}
}

// A rate limit or a server error fails the one call: the chat keeps its
// drafts, and the streamer's next push (the whole text) is a draft again.
func TestDraftTransientFailureIsNoRefusal(t *testing.T) {
	h, a := draftHarness(t)
	ctx := context.Background()
	h.srv.Fail("sendMessageDraft", telegramtest.Failure{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1})
	_, err := a.Send(ctx, gateway.Outbound{Address: aliceLane, Kind: gateway.OutPreview, Text: "hi"})
	var ra *gateway.RetryAfterError
	if !errors.As(err, &ra) {
		t.Fatalf("preview under a rate limit = %v, want a RetryAfterError", err)
	}
	streamTurn(t, a, aliceLane, []string{"hi", "hi there"}, "hi there!")
	if d := h.srv.Drafts(aliceDM.ID); len(d) != 1 || !slices.Equal(d[0].Versions, []string{"hi", "hi there"}) {
		t.Errorf("drafts = %+v, want the retried preview streamed as a draft", d)
	}
	if msgs := h.srv.Messages(aliceDM.ID, -1); len(msgs) != 1 || msgs[0].Text != "hi there!" {
		t.Errorf("messages = %+v, want only the reply", msgs)
	}
}

// Delete of a draft's preview (the reply went out as a new message: a
// long turn, or files sent first) deletes only a message posted in the
// draft's place; a draft vanishes by itself.
func TestDeleteDraftPreview(t *testing.T) {
	ctx := context.Background()
	t.Run("draft", func(t *testing.T) {
		h, a := draftHarness(t)
		pid, err := a.Send(ctx, gateway.Outbound{Address: aliceLane, Kind: gateway.OutPreview, Text: "draft"})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Delete(ctx, aliceLane, pid); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if n := h.srv.Calls("deleteMessage"); n != 0 {
			t.Errorf("%d deleteMessage calls for a draft, want none", n)
		}
	})
	t.Run("message posted in its place", func(t *testing.T) {
		h, a := draftHarness(t)
		pid, err := a.Send(ctx, gateway.Outbound{Address: aliceLane, Kind: gateway.OutPreview, Text: "draft"})
		if err != nil {
			t.Fatal(err)
		}
		h.srv.RefuseDrafts(true)
		if err := a.Edit(ctx, aliceLane, pid, "draft, refused"); err != nil {
			t.Fatal(err)
		}
		if err := a.Delete(ctx, aliceLane, pid); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if del := h.srv.Deleted(); len(del) != 1 || del[0].Text != "draft, refused" {
			t.Errorf("deleted %+v, want the message posted for the refused draft", del)
		}
	})
}

// A reply whose preview was a draft of another process (a restart, or the
// lane's earlier node) is a new message: a draft id never names a message,
// even one whose id has the draft's number.
func TestReplyToAnUnknownDraftIsANewMessage(t *testing.T) {
	h, a := draftHarness(t)
	ctx := context.Background()
	if _, err := a.Send(ctx, gateway.Outbound{Address: aliceLane, Text: "earlier answer"}); err != nil {
		t.Fatal(err)
	}
	earlier := h.srv.Messages(aliceDM.ID, -1)[0]
	pid := draftIDPrefix + "1001:" + strconv.Itoa(earlier.ID)
	parts := &gatewaytest.Parts{}
	out := gateway.Outbound{Address: aliceLane, Kind: gateway.OutReply, Text: "the answer", EditID: pid}
	if _, err := a.Send(ctx, parts.Row(out, 1)); err != nil {
		t.Fatalf("reply: %v", err)
	}
	msgs := h.srv.Messages(aliceDM.ID, -1)
	if len(msgs) != 2 || msgs[0].Edits != 0 || msgs[1].Text != "the answer" {
		t.Fatalf("messages = %+v, want the earlier one untouched and the answer new", msgs)
	}
	if err := a.Delete(ctx, aliceLane, pid); err != nil || len(h.srv.Deleted()) != 0 {
		t.Errorf("Delete of the unknown draft = %v, deleted %+v; want nothing deleted", err, h.srv.Deleted())
	}
}
