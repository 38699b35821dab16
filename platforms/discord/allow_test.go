package discord

import (
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gatewayd/gatewayd/gateway"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestRefusedSenderIsLoggedOncePerInterval(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newAllowlist(Config{Now: func() time.Time { return now }})
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	stranger := &discordgo.User{ID: "666", Username: "x"}
	other := &discordgo.User{ID: "667", Username: "y"}

	for _, step := range []struct {
		name    string
		advance time.Duration
		user    *discordgo.User
		want    int // log lines so far
	}{
		{name: "first refusal is logged", user: stranger, want: 1},
		{name: "repeat within the interval is not", advance: time.Minute, user: stranger, want: 1},
		{name: "another sender is", user: other, want: 2},
		{name: "after the interval it is again", advance: deniedLogEvery, user: stranger, want: 3},
	} {
		now = now.Add(step.advance)
		l.logDenied(log, step.user, "10")
		if got := logs.FilterMessage("discord.sender_refused").Len(); got != step.want {
			t.Fatalf("%s: %d log lines, want %d", step.name, got, step.want)
		}
	}
}

func TestEmptyAllowlistAllowsNobody(t *testing.T) {
	t.Parallel()
	l := newAllowlist(Config{Now: time.Now})
	if l.userAllowed("1", []string{"r"}) {
		t.Fatal("an empty allowlist let a sender in")
	}
	l.set([]string{"1"}, []string{"r"})
	if !l.userAllowed("1", nil) || !l.userAllowed("2", []string{"r"}) || l.userAllowed("2", []string{"q"}) {
		t.Fatal("reloaded allowlist not applied")
	}
}

func TestSnowflakeAt(t *testing.T) {
	t.Parallel()
	// 175928847299117063 is Discord's documented example: 2016-04-30 11:18:25.796 UTC.
	at := time.Date(2016, 4, 30, 11, 18, 25, 796e6, time.UTC)
	if got, id := snowflakeAt(at), uint64(175928847299117063); got > id || id-got >= 1<<22 {
		t.Fatalf("snowflakeAt = %d, want the millisecond of %d", got, id)
	}
}

// TestAuthorizeMakerKnowsOnlyByID: a schedule's maker listed by id is
// allowed; one not listed is refused when no roles are allowed, and not
// known (their roles are not at hand) when some are.
func TestAuthorizeMakerKnowsOnlyByID(t *testing.T) {
	t.Parallel()
	a := &Adapter{allow: newAllowlist(Config{Now: time.Now})}
	dm := gateway.Address{Platform: PlatformName, Kind: gateway.LaneDM, ChatID: "9"}
	for _, c := range []struct {
		name           string
		roles          []string
		user           string
		allowed, known bool
	}{
		{"listed", nil, "1", true, true},
		{"removed, no roles", nil, "2", false, true},
		{"removed, roles allowed", []string{"r"}, "2", false, false},
	} {
		a.allow.set([]string{"1"}, c.roles)
		if allowed, known := a.AuthorizeMaker(dm, c.user); allowed != c.allowed || known != c.known {
			t.Errorf("%s: AuthorizeMaker = %v, %v; want %v, %v", c.name, allowed, known, c.allowed, c.known)
		}
	}
}
