package discord

import (
	"fmt"
	"strconv"

	"github.com/bwmarrin/discordgo"
	"github.com/gatewayd/gatewayd/gateway"
)

// Discord's limits on message components.
const (
	buttonsPerRow    = 5
	maxSelectOptions = 25
	maxOptionLabel   = 100
)

const (
	// selectPrefix starts a question's select menu custom_id,
	// "qselect:<request id>:<question index>". Nothing routes on it: a
	// choice is delivered as its option's value, the button id.
	selectPrefix      = "qselect:"
	selectPlaceholder = "Choose an answer"
)

// componentsFor lays out a message's buttons. A question with more options
// than one row holds gets one select menu instead: rows of buttons would
// bury the question under them.
func componentsFor(out gateway.Outbound, buttons []gateway.Button) ([]discordgo.MessageComponent, error) {
	if out.Question != nil && len(buttons) > buttonsPerRow {
		return questionSelect(out.Question, buttons)
	}
	return buttonRows(buttons)
}

// questionSelect is a string select with one option per button, whose
// value is the button's id, so a choice reaches the gateway as the press
// of that button would.
func questionSelect(q *gateway.QuestionPrompt, buttons []gateway.Button) ([]discordgo.MessageComponent, error) {
	if len(buttons) > maxSelectOptions {
		return nil, fmt.Errorf("discord: %d options (at most %d allowed): %w", len(buttons), maxSelectOptions, gateway.ErrPermanent)
	}
	customID := selectPrefix + q.Pending.ID + ":" + strconv.Itoa(q.Index)
	if err := checkButtonID(customID); err != nil {
		return nil, err
	}
	options := make([]discordgo.SelectMenuOption, 0, len(buttons))
	for n, b := range buttons {
		if err := checkButtonID(b.ID); err != nil {
			return nil, err
		}
		options = append(options, discordgo.SelectMenuOption{Label: optionLabel(b.Label, n), Value: b.ID})
	}
	menu := discordgo.SelectMenu{MenuType: discordgo.StringSelectMenu, CustomID: customID,
		Placeholder: selectPlaceholder, Options: options}
	return []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{menu}}}, nil
}

// optionLabel fits a label to Discord's 1 to 100 characters; an empty one
// becomes the option's number, which the question's text lists.
func optionLabel(label string, n int) string {
	r := []rune(label)
	switch {
	case len(r) == 0:
		return strconv.Itoa(n + 1)
	case len(r) > maxOptionLabel:
		return string(r[:maxOptionLabel-1]) + "…"
	}
	return label
}
