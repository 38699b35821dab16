package gateway

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/chat"
)

// A turn's status message as platforms see it: the view the work view
// (feature/workview) shows, structured for the platforms that take it.
type (
	WorkView   = chat.WorkView
	WorkStep   = chat.WorkStep
	WorkAction = chat.WorkAction
)

// Work action kinds (WorkAction.Kind).
const (
	WorkCommand   = chat.WorkCommand
	WorkFileEdit  = chat.WorkFileEdit
	WorkWebSearch = chat.WorkWebSearch
	WorkMCPTool   = chat.WorkMCPTool
)

// ProgressEditor is an optional capability of a platform that shows the
// work view structured (the API lane): edits of the status message come
// with the view. Platforms without it get Platform.Edit with the text.
type ProgressEditor interface {
	EditProgress(ctx context.Context, addr Address, messageID, text string, view WorkView) error
}
