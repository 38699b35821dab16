package config

import (
	"fmt"
	"regexp"
	"strings"
)

// Matrix configures the Matrix adapter; enabled when the homeserver and an
// access token are set.
type Matrix struct {
	Homeserver      string // the client-server API's base URL (https://matrix.example.org)
	UserID          string // the bot's full id; "" = whoever the token belongs to (whoami)
	AccessToken     string
	AccessTokenFile string
	AllowedUsers    []string // full user ids (@alice:example.org)
	AllowedRooms    []string // room ids (!abc:example.org); empty: every room an allowed user invites the bot to
	Admins          []string // user ids who may decide any approval (codex.approvers)
}

// Enabled reports whether the adapter should run.
func (m Matrix) Enabled() bool { return m.Homeserver != "" && m.AccessToken != "" }

// matrixServerName is the server-name grammar of the Matrix spec (an IPv6
// literal, an IPv4 address or a DNS name, then an optional port), as
// mautrix's id.ServerNameRegex reads it.
var matrixServerName = regexp.MustCompile(`^(?:\[[0-9A-Fa-f:.]{2,45}]|\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|[0-9A-Za-z.-]{1,255})(?::\d{1,5})?$`)

// matrixIDMaxLength bounds a user id (the spec's 255 bytes).
const matrixIDMaxLength = 255

// MatrixUserID checks a full Matrix user id, "@localpart:server" (the
// spec's historical localparts included, as homeservers still have them).
// It returns "" or what is wrong.
func MatrixUserID(id string) string {
	local, server, ok := strings.Cut(strings.TrimPrefix(id, "@"), ":")
	if !strings.HasPrefix(id, "@") || !ok || local == "" || len(id) > matrixIDMaxLength ||
		!matrixServerName.MatchString(server) || strings.ContainsFunc(local, notPrintableASCII) {
		return fmt.Sprintf("invalid user id %q (use the full id with its sigil, e.g. @alice:example.org)", id)
	}
	return ""
}

// MatrixRoomID checks a room id: "!opaque:server", or "!opaque" alone as
// room version 12 makes them. An alias (#room:server) is refused: the
// adapter compares ids, and an alias can be moved to another room.
func MatrixRoomID(id string) string {
	opaque, server, hasServer := strings.Cut(strings.TrimPrefix(id, "!"), ":")
	if !strings.HasPrefix(id, "!") || opaque == "" || len(id) > matrixIDMaxLength ||
		(hasServer && !matrixServerName.MatchString(server)) || strings.ContainsFunc(opaque, notPrintableASCII) ||
		strings.Contains(opaque, "/") {
		return fmt.Sprintf("invalid room id %q (use the room id with its sigil, e.g. !abcdef:example.org, from the client's room settings; not an #alias)", id)
	}
	return ""
}

func notPrintableASCII(r rune) bool { return r <= ' ' || r >= 0x7f }

// validateMatrix checks what spans matrix's keys; the messages never quote
// the token.
func (c *Config) validateMatrix() []error {
	m := c.Matrix
	var errs []error
	switch {
	case m.AccessToken != "" && m.Homeserver == "":
		errs = append(errs, errorf("matrix.homeserver", "required when matrix.access_token is set (the homeserver's URL, e.g. https://matrix.example.org)"))
	case m.Homeserver != "" && m.AccessToken == "":
		errs = append(errs, errorf("matrix.access_token",
			"required when matrix.homeserver is set (or set matrix.access_token_file or GATEWAYD_MATRIX_ACCESS_TOKEN; `gatewayd init` logs in for one)"))
	}
	if m.UserID != "" {
		if msg := MatrixUserID(m.UserID); msg != "" {
			errs = append(errs, errorf("matrix.user_id", "%s", msg))
		}
	}
	if m.Enabled() && len(m.AllowedUsers) == 0 {
		errs = append(errs, errorf("matrix.allowed_users", "required when matrix.homeserver and matrix.access_token are set (full ids such as @alice:example.org)"))
	}
	for _, l := range []struct {
		key   string
		ids   []string
		check func(string) string
	}{
		{"matrix.allowed_users", m.AllowedUsers, MatrixUserID},
		{"matrix.allowed_rooms", m.AllowedRooms, MatrixRoomID},
		{"matrix.admins", m.Admins, MatrixUserID},
	} {
		for _, id := range l.ids {
			if msg := l.check(id); msg != "" {
				errs = append(errs, errorf(l.key, "%s", msg))
				break
			}
		}
	}
	return errs
}

// matrixHomeserver checks matrix.homeserver: an http(s) URL with a host
// and nothing after the path (the client appends /_matrix/client/…).
func matrixHomeserver(s string) string {
	if msg := httpURL(s); msg != "" {
		return fmt.Sprintf("invalid homeserver URL %q (use https://matrix.example.org)", s)
	}
	if strings.ContainsAny(s, "?#") || strings.Contains(s, "/_matrix") {
		return fmt.Sprintf("invalid homeserver URL %q (the server's base URL, without /_matrix/… or a query)", s)
	}
	return ""
}
