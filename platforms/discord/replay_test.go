package discord_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/gatewayd/gatewayd/gateway"
)

// eventsDir holds gateway events in the shapes Discord sends
// (testdata/README.md says how they were made).
const eventsDir = "../../testdata/discord"

// frame is a gateway dispatch as it travels on the websocket.
type frame struct {
	Op   int             `json:"op"`
	Type string          `json:"t"`
	D    json.RawMessage `json:"d"`
}

func readFrame(t *testing.T, name string) frame {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(eventsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var f frame
	if err := json.Unmarshal(raw, &f); err != nil || f.Op != 0 || f.Type == "" {
		t.Fatalf("%s is not a dispatch frame (%v)", name, err)
	}
	return f
}

// TestReplayDiscordEvents sends the stored events over the fake's real
// websocket, so discordgo decodes them exactly as it decodes Discord's: a
// THREAD_CREATE for a thread the fake's REST API does not know (the
// adapter can only learn it from the event), a MESSAGE_CREATE in it and a
// slash command INTERACTION_CREATE there.
func TestReplayDiscordEvents(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	if _, known := srv.Channel("21"); known {
		t.Fatal("the fake already knows thread 21; the replay would not show THREAD_CREATE parsed")
	}
	for _, name := range []string{"thread_create.json", "message_create.json", "interaction_create.json"} {
		f := readFrame(t, name)
		checkShape(t, name, f)
		srv.Dispatch(f.Type, f.D)
	}
	thread := gateway.Address{Platform: "discord", Kind: gateway.LaneThread, ChatID: channel, TopicID: "21"}
	msg := r.sink.next(t)
	if msg.MessageID != "3001" || msg.Address != thread || msg.Text != "hello from a thread" || !msg.Mentioned || msg.SenderID != "1" {
		t.Fatalf("MESSAGE_CREATE delivered as %+v", msg)
	}
	cmd := r.sink.next(t)
	if cmd.MessageID != "4001" || cmd.Address != thread || cmd.Text != "/new" || cmd.SenderID != "1" {
		t.Fatalf("INTERACTION_CREATE delivered as %+v", cmd)
	}
	if key := thread.SessionKey(); key != "v1:discord:thread:21" {
		t.Fatalf("thread lane key %q", key)
	}
}

// checkShape decodes the payload with discordgo's own types and checks the
// fields the adapter reads are there: a renamed field fails here.
func checkShape(t *testing.T, name string, f frame) {
	t.Helper()
	switch f.Type {
	case "MESSAGE_CREATE":
		var m discordgo.MessageCreate
		if err := json.Unmarshal(f.D, &m); err != nil || m.Message == nil || m.ID == "" || m.Author == nil || len(m.Mentions) == 0 {
			t.Fatalf("%s: discordgo decodes %+v, %v", name, m.Message, err)
		}
	case "THREAD_CREATE":
		var c discordgo.ThreadCreate
		if err := json.Unmarshal(f.D, &c); err != nil || c.Channel == nil || c.ParentID == "" || !c.IsThread() {
			t.Fatalf("%s: discordgo decodes %+v, %v", name, c.Channel, err)
		}
	case "INTERACTION_CREATE":
		var i discordgo.InteractionCreate
		if err := json.Unmarshal(f.D, &i); err != nil || i.Interaction == nil || i.Type != discordgo.InteractionApplicationCommand ||
			i.ApplicationCommandData().Name != "new" || i.Member == nil || i.Member.User == nil {
			t.Fatalf("%s: discordgo decodes %+v, %v", name, i.Interaction, err)
		}
	default:
		t.Fatalf("%s: no shape check for %s", name, f.Type)
	}
}
