package chat

import (
	"fmt"
	"strings"
)

// maxKeyIDBytes bounds one id inside a session key; API lane names, the
// longest ids in use, are at most 128 bytes.
const maxKeyIDBytes = 128

// ParseSessionKey is the inverse of Address.SessionKey for the formats it
// documents: it accepts exactly the keys SessionKey derives from a valid
// address whose ids are 1-128 of A-Z a-z 0-9 . _ - (Telegram's negative
// chat ids included), and names what is wrong with anything else. The
// "api" platform, and only it, has lanes of kind api, whose kind the key
// leaves out. A thread key names no parent channel, so ChatID is empty,
// except on Slack, whose thread keys name the channel first.
// Its errors keep the "gateway:" prefix they had in the core: the web
// console strips it from the refusal it shows.
func ParseSessionKey(key string) (Address, error) {
	rest, ok := strings.CutPrefix(key, SessionKeyVersion+":")
	if !ok {
		return Address{}, fmt.Errorf("gateway: session key %q: want prefix %q", key, SessionKeyVersion+":")
	}
	var a Address
	var err error
	if mx, ok := strings.CutPrefix(rest, matrixPlatform+":"); ok {
		a, err = keyMatrix(mx)
	} else {
		var fields []string
		a, fields, err = keyLane(strings.Split(rest, ":"))
		if err == nil {
			a.UserID, err = keyUser(fields)
		}
	}
	if err == nil {
		err = a.Validate()
	}
	if err != nil {
		return Address{}, fmt.Errorf("gateway: session key %q: %w", key, err)
	}
	return a, nil
}

// keyLane reads platform, kind and the lane's ids; it returns the fields
// left over.
func keyLane(f []string) (Address, []string, error) {
	if len(f) < 2 || !isKeyWord(f[0]) {
		return Address{}, nil, fmt.Errorf("want <platform>:<kind>:<id>")
	}
	a := Address{Platform: f[0]}
	if a.Platform == "api" {
		a.Kind, a.ChatID = LaneAPI, f[1]
		return a, f[2:], checkKeyIDs(a.ChatID)
	}
	a.Kind = LaneKind(f[1])
	switch a.Kind {
	case LaneDM, LaneGroup, LaneChannel:
		if len(f) < 3 {
			return Address{}, nil, fmt.Errorf("%s key has no id", a.Kind)
		}
		a.ChatID = f[2]
		return a, f[3:], checkKeyIDs(a.ChatID)
	case LaneThread:
		if threadKeyNamesChat(a.Platform) {
			if len(f) < 4 {
				return Address{}, nil, fmt.Errorf("thread key wants <channel>:<thread>")
			}
			a.ChatID, a.TopicID = f[2], f[3]
			return a, f[4:], checkKeyIDs(a.ChatID, a.TopicID)
		}
		if len(f) < 3 {
			return Address{}, nil, fmt.Errorf("thread key has no id")
		}
		a.TopicID = f[2]
		return a, f[3:], checkKeyIDs(a.TopicID)
	case LaneTopic:
		if len(f) < 4 {
			return Address{}, nil, fmt.Errorf("topic key wants <chat>:<topic>")
		}
		a.ChatID, a.TopicID = f[2], f[3]
		return a, f[4:], checkKeyIDs(a.ChatID, a.TopicID)
	}
	return Address{}, nil, fmt.Errorf("unknown lane kind %q", f[1])
}

// matrixPlatform has ids of its own grammar (room ids hold ':', thread
// keys hold two ids), so its keys are read by keyMatrix alone; every other
// platform's keys are unchanged.
const matrixPlatform = "matrix"

// keyMatrix reads "room:<room_id>" or "thread:<room_id>:<root_event_id>".
// A thread is split at the first ":$": room ids never hold '$', and event
// ids start with it.
func keyMatrix(rest string) (Address, error) {
	a := Address{Platform: matrixPlatform}
	kind, ids, ok := strings.Cut(rest, ":")
	if !ok {
		return Address{}, fmt.Errorf("want matrix:<kind>:<id>")
	}
	a.Kind = LaneKind(kind)
	switch a.Kind {
	case LaneRoom:
		a.ChatID = ids
		return a, checkMatrixID(a.ChatID, '!')
	case LaneThread:
		room, root, ok := strings.Cut(ids, ":$")
		if !ok {
			return Address{}, fmt.Errorf("matrix thread key wants <room_id>:<$root_event_id>")
		}
		a.ChatID, a.TopicID = room, "$"+root
		if err := checkMatrixID(a.ChatID, '!'); err != nil {
			return Address{}, err
		}
		return a, checkMatrixID(a.TopicID, '$')
	}
	return Address{}, fmt.Errorf("unknown matrix lane kind %q", kind)
}

// checkMatrixID: a Matrix id is its sigil ('!' room, '$' event) then
// 1-254 bytes of printable ASCII without space or '/' (a room v3 event id
// with '/' cannot name a lane; the adapter skips such events); a room id
// has no ":$".
func checkMatrixID(id string, sigil byte) error {
	// A room id holding ":$" would make "thread:<room>:<$root>" split in
	// the wrong place: two lanes could share one key.
	ok := len(id) >= 2 && len(id) <= 255 && id[0] == sigil && (sigil != '!' || !strings.Contains(id, ":$"))
	for i := 0; ok && i < len(id); i++ {
		ok = id[i] > ' ' && id[i] <= '~' && id[i] != '/'
	}
	if !ok {
		return fmt.Errorf("id %q is not a Matrix id (%c, 2-255 printable bytes, no '/')", id, sigil)
	}
	return nil
}

// keyUser reads the optional ":user:<id>" suffix of a per-user lane.
func keyUser(f []string) (string, error) {
	switch {
	case len(f) == 0:
		return "", nil
	case len(f) == 2 && f[0] == "user":
		return f[1], checkKeyIDs(f[1])
	}
	return "", fmt.Errorf("unexpected %q after the lane id", strings.Join(f, ":"))
}

func checkKeyIDs(ids ...string) error {
	for _, id := range ids {
		if !isKeyID(id) {
			return fmt.Errorf("id %q is not 1-%d of A-Z a-z 0-9 . _ -", id, maxKeyIDBytes)
		}
	}
	return nil
}

func isKeyID(s string) bool {
	if s == "" || len(s) > maxKeyIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '.' || c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// isKeyWord: a platform name is lower-case letters.
func isKeyWord(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}
