package daemon

import (
	"testing"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/feature/schedules"
)

// The daemon's gateway.Config carries config's defaults for every field
// gateway.New requires, as a hand-built Config gets them from
// WithDefaults: one table, no second defaulting.
func TestGatewayConfigTakesTheTablesDefaults(t *testing.T) {
	cfg := config.Defaults()
	cfg.StateDir = t.TempDir()
	got := (&daemon{cfg: cfg}).gatewayConfig(nil)
	want := gateway.Config{}.WithDefaults()
	type pair struct{ got, want any }
	for name, p := range map[string]pair{
		"MaxLive": {got.MaxLive, want.MaxLive}, "QueueLimit": {got.QueueLimit, want.QueueLimit},
		"MaxConcurrentTurns": {got.MaxConcurrentTurns, want.MaxConcurrentTurns}, "BusyMode": {got.BusyMode, want.BusyMode},
		"ApprovalTimeout": {got.ApprovalTimeout, want.ApprovalTimeout}, "QuestionTimeout": {got.QuestionTimeout, want.QuestionTimeout},
		"Approvals": {got.Approvals, want.Approvals}, "Approvers": {got.Approvers, want.Approvers},
		"DrainTimeout":    {got.DrainTimeout, want.DrainTimeout},
		"PreviewInterval": {got.PreviewInterval, want.PreviewInterval}, "TypingInterval": {got.TypingInterval, want.TypingInterval},
	} {
		if p.got != p.want {
			t.Errorf("%s = %v, want %v", name, p.got, p.want)
		}
	}
	gotSch, wantSch := schedulesOf(t, got.Features).Config(), schedules.Config{}.WithDefaults()
	if gotSch.MinInterval != wantSch.MinInterval || gotSch.MaxPerLane != wantSch.MaxPerLane {
		t.Errorf("Schedules = %+v, want the limits %+v", gotSch, wantSch)
	}
}

// schedulesOf is the schedules feature in list.
func schedulesOf(t *testing.T, list []ext.Feature) *schedules.Schedules {
	t.Helper()
	for _, f := range list {
		if s, ok := f.(*schedules.Schedules); ok {
			return s
		}
	}
	t.Fatal("no schedules feature in the list")
	return nil
}

// Every chat platform's admins reach the gateway under its platform name,
// which is how the gateway decides who is an admin there.
func TestGatewayConfigAdmins(t *testing.T) {
	cfg := config.Defaults()
	cfg.StateDir = t.TempDir()
	cfg.Telegram.Admins, cfg.Discord.Admins = []string{"42"}, []string{"7"}
	cfg.Slack.Admins, cfg.Matrix.Admins = []string{"U9"}, []string{"@boss:example.org"}
	got := (&daemon{cfg: cfg}).gatewayConfig(nil).Admins
	for platform, want := range map[string]string{"telegram": "42", "discord": "7", "slack": "U9", "matrix": "@boss:example.org"} {
		if len(got[platform]) != 1 || got[platform][0] != want {
			t.Errorf("Admins[%q] = %q, want [%q]", platform, got[platform], want)
		}
	}
}
