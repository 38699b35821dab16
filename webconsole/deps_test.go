package webconsole_test

import (
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/account"
	"github.com/gatewayd/gatewayd/gateway/feature/models"
	"github.com/gatewayd/gatewayd/gateway/feature/toolbox"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/webconsole"
)

// The daemon serves the console from these concrete types; the interfaces
// are drawn around what the handlers call, so each must hold whole.
var (
	_ webconsole.ConsoleStore   = (*store.Store)(nil)
	_ webconsole.StoreStatus    = (*store.Store)(nil)
	_ webconsole.LaneStater     = (*gateway.Gateway)(nil)
	_ webconsole.ModelSource    = (*models.Models)(nil)
	_ webconsole.ToolSource     = (*toolbox.Toolbox)(nil)
	_ webconsole.AccountControl = (*account.Account)(nil)
	_ webconsole.CodexStatus    = (*codex.Client)(nil)
)
