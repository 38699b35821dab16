package discordtest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Component is one button or select menu of a bot message, its action
// rows flattened, as the fake keeps it.
type Component struct {
	Type        discordgo.ComponentType // ButtonComponent or SelectMenuComponent (a string select)
	CustomID    string
	Label       string   // a button's
	Placeholder string   // a select menu's
	Options     []Option // a select menu's
}

// Option is one choice of a select menu.
type Option struct {
	Label, Value string
}

// Values are a select menu's option values, in order.
func (c Component) Values() []string {
	out := make([]string, len(c.Options))
	for i, o := range c.Options {
		out[i] = o.Value
	}
	return out
}

// Select is the message's first select menu, if it has one.
func (m SentMessage) Select() (Component, bool) {
	for _, c := range m.Components {
		if c.Type == discordgo.SelectMenuComponent {
			return c, true
		}
	}
	return Component{}, false
}

// Discord's limits on message components (the ones the bot could break).
const (
	maxRows        = 5
	maxRowButtons  = 5
	maxCustomID    = 100
	maxButtonLabel = 80
	maxOptions     = 25
	maxOptionText  = 100
	maxPlaceholder = 150
)

type rawComponent struct {
	Type        discordgo.ComponentType `json:"type"`
	CustomID    string                  `json:"custom_id"`
	Label       string                  `json:"label"`
	Placeholder string                  `json:"placeholder"`
	MaxValues   int                     `json:"max_values"`
	Options     []Option                `json:"options"`
	Components  []rawComponent          `json:"components"` // an action row's
}

// parseComponents reads a message's components and checks them as Discord
// does, so a layout Discord would refuse fails in tests too; the error is
// Discord's 400 message.
func parseComponents(raws []json.RawMessage) ([]Component, error) {
	if len(raws) > maxRows {
		return nil, fmt.Errorf("components: %d action rows, at most %d", len(raws), maxRows)
	}
	var out []Component
	seen := map[string]bool{}
	for r, raw := range raws {
		var row rawComponent
		if err := json.Unmarshal(raw, &row); err != nil {
			return nil, fmt.Errorf("components.%d: %v", r, err)
		}
		comps, err := parseRow(row, seen)
		if err != nil {
			return nil, fmt.Errorf("components.%d.%w", r, err)
		}
		out = append(out, comps...)
	}
	return out, nil
}

// parseRow checks one action row: up to five buttons, or one select menu
// alone.
func parseRow(row rawComponent, seen map[string]bool) ([]Component, error) {
	if row.Type != discordgo.ActionsRowComponent || len(row.Components) == 0 {
		return nil, fmt.Errorf("type: must be an action row with components")
	}
	var out []Component
	for i, c := range row.Components {
		if seen[c.CustomID] {
			return nil, fmt.Errorf("components.%d.custom_id: %q is used twice", i, c.CustomID)
		}
		seen[c.CustomID] = true
		var err error
		switch c.Type {
		case discordgo.ButtonComponent:
			err = checkButton(c, len(row.Components))
		case discordgo.SelectMenuComponent:
			err = checkSelect(c, len(row.Components))
		default:
			err = fmt.Errorf("type %d: not supported by the fake", c.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("components.%d.%w", i, err)
		}
		out = append(out, Component{Type: c.Type, CustomID: c.CustomID, Label: c.Label, Placeholder: c.Placeholder, Options: c.Options})
	}
	return out, nil
}

func checkButton(c rawComponent, inRow int) error {
	switch {
	case inRow > maxRowButtons:
		return fmt.Errorf("components: %d buttons in a row, at most %d", inRow, maxRowButtons)
	case !within(c.CustomID, 1, maxCustomID):
		return fmt.Errorf("custom_id: must be 1 to %d characters", maxCustomID)
	case utf8.RuneCountInString(c.Label) > maxButtonLabel:
		return fmt.Errorf("label: must be %d or fewer characters", maxButtonLabel)
	}
	return nil
}

func checkSelect(c rawComponent, inRow int) error {
	switch {
	case inRow != 1:
		return fmt.Errorf("type: a select menu must be alone in its row")
	case !within(c.CustomID, 1, maxCustomID):
		return fmt.Errorf("custom_id: must be 1 to %d characters", maxCustomID)
	case utf8.RuneCountInString(c.Placeholder) > maxPlaceholder:
		return fmt.Errorf("placeholder: must be %d or fewer characters", maxPlaceholder)
	case len(c.Options) < 1 || len(c.Options) > maxOptions:
		return fmt.Errorf("options: must be between 1 and %d in length", maxOptions)
	case c.MaxValues > len(c.Options):
		return fmt.Errorf("max_values: more than the options")
	}
	values := map[string]bool{}
	for i, o := range c.Options {
		switch {
		case !within(o.Label, 1, maxOptionText):
			return fmt.Errorf("options.%d.label: must be 1 to %d characters", i, maxOptionText)
		case !within(o.Value, 1, maxOptionText):
			return fmt.Errorf("options.%d.value: must be 1 to %d characters", i, maxOptionText)
		case values[o.Value]:
			return fmt.Errorf("options.%d.value: %q is used twice", i, o.Value)
		}
		values[o.Value] = true
	}
	return nil
}

func within(s string, lo, hi int) bool {
	n := utf8.RuneCountInString(s)
	return n >= lo && n <= hi
}

// ChooseOption dispatches a string select interaction: userID picked
// values in the menu customID of a bot message. It returns the
// interaction id. Like PressButton it does not check that the message
// still offers the menu: on Discord a choice can race the edit removing it.
func (s *Server) ChooseOption(channelID, messageID, customID, userID string, values ...string) string {
	return s.interaction(channelID, userID, discordgo.InteractionMessageComponent, map[string]any{
		"custom_id": customID, "component_type": discordgo.SelectMenuComponent, "values": nonNil(values),
	}, map[string]any{"id": messageID, "channel_id": channelID})
}

// SetPermissions sets the permissions a guild member's interactions carry
// (member.permissions, which Discord computes for the interaction's
// channel; the fake uses the same value in every channel). Members not
// set have memberPermissions.
func (s *Server) SetPermissions(userID string, perms int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.permissions[userID] = perms
}

// memberPermissions are an ordinary member's: read and write, nothing
// to administer.
const memberPermissions = discordgo.PermissionViewChannel | discordgo.PermissionSendMessages |
	discordgo.PermissionReadMessageHistory | discordgo.PermissionAddReactions | discordgo.PermissionUseApplicationCommands

func (s *Server) permissionsLocked(userID string) string {
	perms, ok := s.permissions[userID]
	if !ok {
		perms = memberPermissions
	}
	return strconv.FormatInt(perms, 10)
}

// Components returns a bot message's components as they are now (after
// its edits); nil when it has none.
func (s *Server) Components(channelID, messageID string) []Component {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Component(nil), s.components[channelID+"/"+messageID]...)
}

// LastBotMessage returns the bot's latest message in a channel, as
// BotMessages does.
func (s *Server) LastBotMessage(channelID string) (SentMessage, bool) {
	msgs := s.BotMessages(channelID)
	if len(msgs) == 0 {
		return SentMessage{}, false
	}
	return msgs[len(msgs)-1], true
}

func buttonIDs(comps []Component) []string {
	var ids []string
	for _, c := range comps {
		if c.Type == discordgo.ButtonComponent {
			ids = append(ids, c.CustomID)
		}
	}
	return ids
}
