package chat

import (
	"strings"
	"testing"
)

func TestParseSessionKey(t *testing.T) {
	tests := []struct {
		name, key string
		want      Address
	}{
		{"telegram dm", "v1:telegram:dm:42", Address{Platform: "telegram", Kind: LaneDM, ChatID: "42"}},
		{"telegram group", "v1:telegram:group:-100123", Address{Platform: "telegram", Kind: LaneGroup, ChatID: "-100123"}},
		{"telegram topic", "v1:telegram:topic:-100123:7", Address{Platform: "telegram", Kind: LaneTopic, ChatID: "-100123", TopicID: "7"}},
		{"discord dm", "v1:discord:dm:99", Address{Platform: "discord", Kind: LaneDM, ChatID: "99"}},
		{"discord channel", "v1:discord:channel:5", Address{Platform: "discord", Kind: LaneChannel, ChatID: "5"}},
		{"discord per-user", "v1:discord:channel:5:user:6", Address{Platform: "discord", Kind: LaneChannel, ChatID: "5", UserID: "6"}},
		{"discord thread", "v1:discord:thread:8", Address{Platform: "discord", Kind: LaneThread, TopicID: "8"}},
		{"slack dm", "v1:slack:dm:D0123ABC", Address{Platform: "slack", Kind: LaneDM, ChatID: "D0123ABC"}},
		{"slack thread", "v1:slack:thread:C0123ABC:1700000000.000100", Address{Platform: "slack", Kind: LaneThread, ChatID: "C0123ABC", TopicID: "1700000000.000100"}},
		{"api lane", "v1:api:my.lane_1-x", Address{Platform: "api", Kind: LaneAPI, ChatID: "my.lane_1-x"}},
		{"matrix room", "v1:matrix:room:!a:example.org", Address{Platform: "matrix", Kind: LaneRoom, ChatID: "!a:example.org"}},
		{"matrix room with port", "v1:matrix:room:!a:example.org:8448", Address{Platform: "matrix", Kind: LaneRoom, ChatID: "!a:example.org:8448"}},
		{"matrix v12 room", "v1:matrix:room:!Hx9_zW-q3mAbcdefghijklmnopqrstuvwxyz0123456", Address{Platform: "matrix", Kind: LaneRoom, ChatID: "!Hx9_zW-q3mAbcdefghijklmnopqrstuvwxyz0123456"}},
		{"matrix thread", "v1:matrix:thread:!a:example.org:$x", Address{Platform: "matrix", Kind: LaneThread, ChatID: "!a:example.org", TopicID: "$x"}},
		{"matrix thread v1 event", "v1:matrix:thread:!a:example.org:8448:$x:server", Address{Platform: "matrix", Kind: LaneThread, ChatID: "!a:example.org:8448", TopicID: "$x:server"}},
		{"matrix thread v12 room", "v1:matrix:thread:!hash:$Ab-c_d", Address{Platform: "matrix", Kind: LaneThread, ChatID: "!hash", TopicID: "$Ab-c_d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSessionKey(tt.key)
			if err != nil {
				t.Fatalf("ParseSessionKey(%q): %v", tt.key, err)
			}
			if got != tt.want {
				t.Fatalf("ParseSessionKey(%q) = %+v, want %+v", tt.key, got, tt.want)
			}
			if back := got.SessionKey(); back != tt.key {
				t.Fatalf("SessionKey() = %q, want %q", back, tt.key)
			}
		})
	}
}

func TestParseSessionKeyRejects(t *testing.T) {
	for _, key := range []string{
		"", "v1", "v1:", "v2:telegram:dm:1", "telegram:dm:1", "v1:telegram", "v1:telegram:dm",
		"v1:telegram:dm:", "v1:telegram:topic:1", "v1:telegram:topic:1:", "v1:telegram:bogus:1",
		"v1:telegram:api:1", "v1:Telegram:dm:1", "v1:api:", "v1:api:a:b", "v1:api:" + strings.Repeat("a", 129),
		"v1:discord:channel:5:user:", "v1:discord:channel:5:user", "v1:discord:channel:5:owner:6",
		"v1:discord:channel:5:user:6:user:7", "v1:telegram:dm:1 2", "v1:telegram:dm:1\n", "v1:api:é",
		"v1:telegram:dm:1:", "v1::dm:1", "v1:slack:thread:1700000000.000100", "v1:slack:thread:C1:",
		"v1:discord:thread:C1:1700000000.000100",
		"v1:matrix:room:", "v1:matrix:room:a:b", "v1:matrix:room:!", "v1:matrix:room:!a b", "v1:matrix:room:!a/b",
		"v1:matrix:thread:!a:b", "v1:matrix:thread:!a:b:$", "v1:matrix:room:!a:$b", "v1:matrix:thread:$x", "v1:matrix:thread:!a:$x/y",
		"v1:matrix:dm:!a:b", "v1:matrix:group:!a", "v1:matrix", "v1:matrix:room", "v1:telegram:room:1",
		"v1:matrix:room:!" + strings.Repeat("a", 255),
	} {
		if a, err := ParseSessionKey(key); err == nil {
			t.Errorf("ParseSessionKey(%q) = %+v, want an error", key, a)
		} else if !strings.Contains(err.Error(), "session key") {
			t.Errorf("ParseSessionKey(%q) error %q does not say what it parsed", key, err)
		}
	}
}

// FuzzParseSessionKey: any string either parses to an address whose
// SessionKey is that very string (one key, one lane) or is refused; and an
// address built from fuzzed parts that ParseSessionKey can express comes
// back unchanged.
func FuzzParseSessionKey(f *testing.F) {
	f.Add("v1:telegram:topic:-100123:7", "telegram", "topic", "-100123", "7", "")
	f.Add("v1:discord:channel:5:user:6", "discord", "channel", "5", "", "6")
	f.Add("v1:api:lane", "api", "api", "lane", "", "")
	f.Add("v1:discord:thread:8", "discord", "thread", "", "8", "")
	f.Add("v1:x:dm::", "x", "dm", "a:b", "", "")
	f.Add("v1:slack:thread:C1:1700000000.000100", "slack", "thread", "C1", "1700000000.000100", "")
	f.Add("v1:matrix:thread:!a:s:$e", "matrix", "thread", "!a:s", "$e", "")
	f.Add("v1:matrix:room:!a:s", "matrix", "room", "!a:s", "", "")
	f.Fuzz(func(t *testing.T, key, platform, kind, chat, topic, user string) {
		if a, err := ParseSessionKey(key); err == nil {
			if back := a.SessionKey(); back != key {
				t.Fatalf("ParseSessionKey(%q) = %+v, whose key is %q", key, a, back)
			}
		}
		a := canonicalAddress(Address{Platform: platform, Kind: LaneKind(kind), ChatID: chat, TopicID: topic, UserID: user})
		got, err := ParseSessionKey(a.SessionKey())
		if expressible(a) {
			if err != nil || got != a {
				t.Fatalf("round trip of %+v via %q: got %+v, %v", a, a.SessionKey(), got, err)
			}
		} else if err == nil && got.SessionKey() != a.SessionKey() {
			t.Fatalf("%+v: key %q parsed to %+v", a, a.SessionKey(), got)
		}
	})
}

// canonicalAddress drops what a kind's key does not carry.
func canonicalAddress(a Address) Address {
	switch a.Kind {
	case LaneThread:
		if !threadKeyNamesChat(a.Platform) {
			a.ChatID = ""
		}
	case LaneTopic:
	default:
		a.TopicID = ""
	}
	return a
}

// expressible: the addresses ParseSessionKey promises to read back.
func expressible(a Address) bool {
	if a.Platform == matrixPlatform {
		return matrixExpressible(a)
	}
	if a.Validate() != nil || !isKeyWord(a.Platform) || (a.Kind == LaneAPI) != (a.Platform == "api") {
		return false
	}
	for _, id := range []string{a.ChatID, a.TopicID, a.UserID} {
		if id != "" && !isKeyID(id) {
			return false
		}
	}
	return true
}

// matrixExpressible: a Matrix room or thread whose ids pass the Matrix rule
// (and, in a thread, a room id that cannot be mistaken for the split).
func matrixExpressible(a Address) bool {
	if a.Validate() != nil || a.UserID != "" || checkMatrixID(a.ChatID, '!') != nil || strings.Contains(a.ChatID, ":$") {
		return false
	}
	switch a.Kind {
	case LaneRoom:
		return a.TopicID == ""
	case LaneThread:
		return checkMatrixID(a.TopicID, '$') == nil
	}
	return false
}
