package telegram

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/chat"
)

// updatesDir holds Bot API updates in the shapes Telegram sends
// (testdata/README.md says how they were made).
const updatesDir = "../../testdata/telegram"

// readUpdate decodes a stored update strictly into go-telegram/bot's
// models: a field the library no longer knows fails the test, as a shape
// that no longer parses.
func readUpdate(t testing.TB, name string) *models.Update {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(updatesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var u models.Update
	if err := dec.Decode(&u); err != nil {
		t.Fatalf("%s no longer parses as a models.Update: %v", name, err)
	}
	return &u
}

// TestReplayTelegramUpdates serves every stored update through the fake
// Bot API's getUpdates to a running adapter and checks what reached the
// gateway: each lane kind, the caption and photo, the button press, and the
// edit, delivered as an edit (the gateway applies it to a waiting message).
func TestReplayTelegramUpdates(t *testing.T) {
	tests := []struct {
		file    string
		deliver bool
		key     string // session key of the lane
		text    string
		files   int
		data    string // callback data
	}{
		{"01-private.json", true, "v1:telegram:dm:1001", "hello from a private chat", 0, ""},
		{"02-group.json", true, "v1:telegram:group:-2002", "what is up in the group", 0, ""},
		{"03-forum-topic.json", true, "v1:telegram:topic:-1001:42", "in a forum topic", 0, ""},
		{"04-general-topic.json", true, "v1:telegram:topic:-1001:1", "in the General topic", 0, ""},
		{"05-photo-caption.json", true, "v1:telegram:dm:1001", "what is in this photo?", 1, ""},
		{"06-edited.json", true, "v1:telegram:dm:1001", "hello from a private chat (edited)", 0, ""},
		{"07-callback-query.json", true, "v1:telegram:dm:1001", "", 0, "approve:ap-1:accept"},
	}
	h := newHarness(t)
	_, sink := h.startDefault(t)
	want := 0
	for _, tt := range tests {
		h.srv.Queue(readUpdate(t, tt.file))
		if tt.deliver {
			want++
		}
	}
	h.srv.Text(aliceDM, alice, 0, "sentinel", nil)
	got := sink.waitN(t, want+1)
	if last := got[len(got)-1]; last.Text != "sentinel" || len(got) != want+1 {
		t.Fatalf("deliveries %+v: want %d then the sentinel", got, want)
	}
	i := 0
	for _, tt := range tests {
		if !tt.deliver {
			continue
		}
		in := got[i]
		i++
		if key := in.Address.SessionKey(); key != tt.key {
			t.Errorf("%s: lane %q, want %q", tt.file, key, tt.key)
		}
		if a, err := chat.ParseSessionKey(in.Address.SessionKey()); err != nil || a.SessionKey() != tt.key {
			t.Errorf("%s: session key does not parse back: %+v, %v", tt.file, a, err)
		}
		if in.Edited != strings.Contains(tt.file, "edited") {
			t.Errorf("%s: delivered with Edited %v", tt.file, in.Edited)
		}
		if in.Text != tt.text || len(in.Attachments) != tt.files || in.Callback != tt.data {
			t.Errorf("%s: text %q files %d callback %q; want %q %d %q", tt.file, in.Text, len(in.Attachments), in.Callback, tt.text, tt.files, tt.data)
		}
	}
}

// FuzzUpdate decodes any update (the stored ones are the seeds) and builds
// the inbound the adapter would deliver. Nothing may panic, and whatever
// becomes an inbound names a valid lane whose session key parses back to
// it and carries something to act on.
func FuzzUpdate(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join(updatesDir, "*.json"))
	for _, n := range names {
		raw, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	a, err := New(Config{Token: "1:fuzz", Cursor: newMemCursor(), BotUsername: "gatewayd_test_bot", AllowedUsers: []int64{1001}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var u models.Update
		if json.Unmarshal(raw, &u) != nil {
			return
		}
		var (
			in gateway.Inbound
			ok bool
		)
		switch {
		case u.Message != nil:
			in, ok = a.inboundFromMessage(u.Message)
		case u.CallbackQuery != nil:
			in, ok = a.inboundFromCallback(u.CallbackQuery)
		}
		if !ok {
			return
		}
		if err := in.Address.Validate(); err != nil {
			t.Fatalf("inbound with an invalid address %+v: %v", in.Address, err)
		}
		if back, err := chat.ParseSessionKey(in.Address.SessionKey()); err != nil || back.SessionKey() != in.Address.SessionKey() {
			t.Fatalf("lane %+v: key %q does not parse back (%v)", in.Address, in.Address.SessionKey(), err)
		}
		if in.MessageID == "" || in.SenderID == "" || (in.Text == "" && in.Callback == "" && len(in.Attachments) == 0) {
			t.Fatalf("inbound with nothing to act on: %+v", in)
		}
	})
}
