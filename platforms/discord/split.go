package discord

import "github.com/gatewayd/gatewayd/platforms/internal/mdsplit"

// maxMessageRunes is Discord's message length limit: 2,000 characters
// (Unicode code points).
const maxMessageRunes = 2000

// splitMessage cuts text into parts of at most limit runes (mdsplit.Split:
// at newlines, then spaces, code fences closed and reopened).
func splitMessage(text string, limit int) []string { return mdsplit.Split(text, limit) }
