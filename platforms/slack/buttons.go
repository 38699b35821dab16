package slack

import (
	"fmt"
	"strconv"

	"github.com/slack-go/slack"

	"github.com/gatewayd/gatewayd/gateway"
)

// Slack's limits on an actions block.
const (
	maxButtons       = 25
	maxButtonLabel   = 75
	maxButtonValue   = 2000
	maxSelectOptions = 100
	maxOptionValue   = 150
	buttonsBeforeSel = 5 // a question with more options gets a select
	actionsBlockID   = "gw"
	selectActionID   = "gwselect"
	selectHint       = "Choose an answer"
)

// actionsFor lays out a message's buttons as one actions block. A
// question with more options than fit a line gets one select menu instead:
// rows of buttons would bury the question. Either way the value that
// comes back is the button's id.
func actionsFor(question bool, buttons []gateway.Button) (*slack.ActionBlock, error) {
	if question && len(buttons) > buttonsBeforeSel {
		return selectFor(buttons)
	}
	if len(buttons) == 0 || len(buttons) > maxButtons {
		return nil, fmt.Errorf("slack: %d buttons (1 to %d allowed): %w", len(buttons), maxButtons, gateway.ErrPermanent)
	}
	elements := make([]slack.BlockElement, 0, len(buttons))
	for i, b := range buttons {
		if b.ID == "" || len(b.ID) > maxButtonValue {
			return nil, fmt.Errorf("slack: button id %q: must be 1..%d bytes: %w", b.ID, maxButtonValue, gateway.ErrPermanent)
		}
		label := slack.NewTextBlockObject(slack.PlainTextType, optionLabel(b.Label, i), false, false)
		elements = append(elements, slack.NewButtonBlockElement("gw"+strconv.Itoa(i), b.ID, label))
	}
	return slack.NewActionBlock(actionsBlockID, elements...), nil
}

func selectFor(buttons []gateway.Button) (*slack.ActionBlock, error) {
	if len(buttons) > maxSelectOptions {
		return nil, fmt.Errorf("slack: %d options (at most %d allowed): %w", len(buttons), maxSelectOptions, gateway.ErrPermanent)
	}
	options := make([]*slack.OptionBlockObject, 0, len(buttons))
	for i, b := range buttons {
		if b.ID == "" || len(b.ID) > maxOptionValue {
			return nil, fmt.Errorf("slack: option id %q: must be 1..%d bytes: %w", b.ID, maxOptionValue, gateway.ErrPermanent)
		}
		text := slack.NewTextBlockObject(slack.PlainTextType, optionLabel(b.Label, i), false, false)
		options = append(options, slack.NewOptionBlockObject(b.ID, text, nil))
	}
	hint := slack.NewTextBlockObject(slack.PlainTextType, selectHint, false, false)
	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, hint, selectActionID, options...)
	return slack.NewActionBlock(actionsBlockID, sel), nil
}

// optionLabel fits a label to Slack's 1 to 75 characters; an empty one
// becomes the option's number, which the question's text lists.
func optionLabel(label string, n int) string {
	if label == "" {
		return strconv.Itoa(n + 1)
	}
	return cutRunes(label, maxButtonLabel)
}
