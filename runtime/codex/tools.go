package codex

import (
	"context"
	"encoding/json"

	"go.uber.org/zap"
)

// Dynamic tools (docs/codex-app-server.md §11): function tools the client registers on
// thread/start (dynamicTools; initialize declares experimentalApi) and
// serves itself. When the model calls one, the app-server sends the server
// request item/tool/call; the answer's text is what the model sees as the
// tool's output. A thread keeps its tools across a kill and thread/resume.

// DynamicTool is a function tool registered with thread/start.
type DynamicTool struct {
	Name, Description string
	// InputSchema is the JSON Schema of the tool's arguments.
	InputSchema json.RawMessage
}

func (t DynamicTool) spec() map[string]any {
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	return map[string]any{"type": "function", "name": t.Name, "description": t.Description, "inputSchema": schema}
}

// ToolCall is one item/tool/call request, flattened.
type ToolCall struct {
	ThreadID, TurnID, CallID string
	Tool                     string          // the tool's name
	Arguments                json.RawMessage // as the model wrote them
}

// ToolResult answers a tool call: Text is the tool output the model reads
// (also the reason of a refusal), Success whether the call did its work.
type ToolResult struct {
	Text    string
	Success bool
}

// ToolCallHandler serves dynamic tool calls. Like an ApprovalHandler it
// runs on the request's own goroutine, and ctx ends when the request is
// resolved elsewhere, its turn completes or the process dies; a result
// returned after that is not sent.
type ToolCallHandler func(ctx context.Context, call ToolCall) ToolResult

// toolCallMethod is the server request of a dynamic tool call.
const toolCallMethod = "item/tool/call"

// serveToolCall answers item/tool/call with the handler's result.
func (c *Client) serveToolCall(ctx context.Context, cn *conn, id json.RawMessage, params json.RawMessage) {
	var p struct {
		ThreadID  string          `json:"threadId"`
		TurnID    string          `json:"turnId"`
		CallID    string          `json:"callId"`
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		c.log.Warn("codex.tool_call_malformed", zap.Error(err))
		if err := cn.replyError(id, -32602, "malformed item/tool/call params"); err != nil {
			c.log.Debug("codex.reply_failed", zap.String("method", toolCallMethod), zap.Error(err))
		}
		return
	}
	call := ToolCall{ThreadID: p.ThreadID, TurnID: p.TurnID, CallID: p.CallID, Tool: p.Tool, Arguments: p.Arguments}
	res := c.opts.ToolCall(ctx, call)
	if ctx.Err() != nil {
		c.log.Info("codex.tool_call_resolved_elsewhere", zap.String("tool", p.Tool), zap.String("thread_id", p.ThreadID))
		return
	}
	c.log.Info("codex.tool_call", zap.String("tool", p.Tool), zap.String("thread_id", p.ThreadID),
		zap.String("call_id", p.CallID), zap.Bool("success", res.Success))
	answer := map[string]any{
		"contentItems": []map[string]string{{"type": "inputText", "text": res.Text}},
		"success":      res.Success,
	}
	if err := cn.reply(id, answer); err != nil {
		c.log.Warn("codex.reply_failed", zap.String("method", toolCallMethod), zap.Error(err))
	}
}

// ItemImageGeneration is the item of an image codex generated.
const ItemImageGeneration = "imageGeneration"

// SavedPath is where codex saved the image of an imageGeneration item, ""
// for other items and images not saved.
func (it Item) SavedPath() string {
	if it.Type != ItemImageGeneration {
		return ""
	}
	var p struct {
		SavedPath string `json:"savedPath"`
	}
	_ = json.Unmarshal(it.Raw, &p) // best effort: no path → nothing to send
	return p.SavedPath
}
