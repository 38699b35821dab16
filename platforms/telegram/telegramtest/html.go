package telegramtest

// ParseHTML checks text the way the fake Bot API checks a parse_mode HTML
// message (known tags, balanced, only the entities Telegram knows) and
// returns its visible text, so tests outside the fake can hold what an
// adapter renders to the same rules.
func ParseHTML(text string) (visible string, err error) { return parseHTML(text) }
