package slacktest

import (
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"
)

// Slack's limits on blocks, checked so that the adapter's limits are tested
// against the fake instead of assumed.
const (
	maxMarkdownBlock = 12000 // runes in one markdown block
	maxBlocksTotal   = 13000 // runes of markdown over a message's blocks
	maxBlocks        = 50
	maxSectionText   = 3000
	maxActions       = 25
	maxButtonText    = 75
	maxButtonValue   = 2000
	maxSelectOptions = 100
)

// block is the part of a Block Kit block the fake reads.
type block struct {
	Type     string          `json:"type"`
	BlockID  string          `json:"block_id,omitempty"`
	Text     flexText        `json:"text,omitempty"`
	Elements []element       `json:"elements,omitempty"`
	Raw      json.RawMessage `json:"-"`
}

// element is a button, a static select or a context element.
type element struct {
	Type     string     `json:"type"`
	ActionID string     `json:"action_id,omitempty"`
	Text     flexText   `json:"text,omitempty"`
	Value    string     `json:"value,omitempty"`
	Options  []selectOp `json:"options,omitempty"`
}

type selectOp struct {
	Text  flexText `json:"text"`
	Value string   `json:"value"`
}

// flexText is a block's text: a plain string (markdown blocks) or a text
// object {"type","text"} (sections, buttons).
type flexText struct {
	plain string
	obj   struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
}

func (t *flexText) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &t.plain)
	}
	return json.Unmarshal(b, &t.obj)
}

func (t flexText) str() string {
	if t.plain != "" {
		return t.plain
	}
	return t.obj.Text
}

func decodeBlocks(raw json.RawMessage) []block {
	var blocks []block
	if len(raw) == 0 {
		return nil
	}
	_ = json.Unmarshal(raw, &blocks)
	return blocks
}

// Button is one button or select option found in a message's blocks.
type Button struct {
	ActionID, BlockID, Label, Value string
	Select                          bool // an option of a static_select
}

// Buttons is every button and select option of m, in order.
func Buttons(m Message) []Button {
	var out []Button
	for _, b := range decodeBlocks(m.Blocks) {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			switch e.Type {
			case "button":
				out = append(out, Button{ActionID: e.ActionID, BlockID: b.BlockID, Label: e.Text.str(), Value: e.Value})
			case "static_select":
				for _, o := range e.Options {
					out = append(out, Button{ActionID: e.ActionID, BlockID: b.BlockID, Label: o.Text.str(), Value: o.Value, Select: true})
				}
			}
		}
	}
	return out
}

// checkBlocks returns Slack's error code for blocks it would refuse, or "".
func checkBlocks(raw string) string {
	if raw == "" {
		return ""
	}
	var blocks []block
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil || len(blocks) > maxBlocks {
		return "invalid_blocks"
	}
	total := 0
	for _, b := range blocks {
		if code := checkBlock(b); code != "" {
			return code
		}
		if b.Type == "markdown" {
			total += utf8.RuneCountInString(b.Text.str())
		}
	}
	if total > maxBlocksTotal {
		return "msg_blocks_too_long"
	}
	return ""
}

func checkBlock(b block) string {
	switch b.Type {
	case "markdown":
		if n := utf8.RuneCountInString(b.Text.str()); n == 0 || n > maxMarkdownBlock {
			return "invalid_blocks"
		}
	case "section", "context":
		if utf8.RuneCountInString(b.Text.str()) > maxSectionText {
			return "invalid_blocks"
		}
	case "actions":
		return checkActions(b.Elements)
	default:
		return "invalid_blocks"
	}
	return ""
}

func checkActions(els []element) string {
	if len(els) == 0 || len(els) > maxActions {
		return "invalid_blocks"
	}
	for _, e := range els {
		switch {
		case e.ActionID == "" || len(e.ActionID) > 255:
			return "invalid_blocks"
		case e.Type == "button" && (utf8.RuneCountInString(e.Text.str()) > maxButtonText || len(e.Value) > maxButtonValue):
			return "invalid_blocks"
		case e.Type == "static_select" && (len(e.Options) == 0 || len(e.Options) > maxSelectOptions):
			return "invalid_blocks"
		case e.Type != "button" && e.Type != "static_select":
			return "invalid_blocks"
		}
	}
	return ""
}

// findAction locates the element of m carrying value: the payload of a
// press of it.
func findAction(m Message, value string) (Button, error) {
	for _, b := range Buttons(m) {
		if b.Value == value {
			return b, nil
		}
	}
	return Button{}, fmt.Errorf("slacktest: message %s has no button with value %q", m.TS, value)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
