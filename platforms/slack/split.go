package slack

import "github.com/gatewayd/gatewayd/platforms/internal/mdsplit"

// maxPartRunes is the length of one part in runes: a markdown block
// holds 12,000 characters but a message's blocks only about 13,000, and
// 3,000 also fits a mrkdwn section, so every part renders either way.
const maxPartRunes = 3000

// splitMessage cuts text into parts of at most limit runes (mdsplit.Split:
// at newlines, then spaces, code fences closed and reopened).
func splitMessage(text string, limit int) []string { return mdsplit.Split(text, limit) }
