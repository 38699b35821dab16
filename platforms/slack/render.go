package slack

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// maxFallbackRunes bounds a message's text field: it is only the
// notification and accessibility fallback of the markdown block, and
// chat.update refuses long text (about 4,000 bytes).
const maxFallbackRunes = 1000

// partBlocks is one part as Slack blocks: an optional mrkdwn section that
// pings (Slack notifies from text and mrkdwn, not from a markdown block),
// the part verbatim as a markdown block (Slack renders Codex's
// CommonMark itself, and the text stays exactly what Codex wrote), and
// the buttons, if any.
func partBlocks(part, ping string, actions *slack.ActionBlock) []slack.Block {
	var blocks []slack.Block
	if ping != "" {
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "<@"+ping+">", false, false), nil, nil))
	}
	blocks = append(blocks, slack.NewMarkdownBlock("", part))
	if actions != nil {
		blocks = append(blocks, actions)
	}
	return blocks
}

// fallbackText is a part's text field: the mrkdwn rendering, cut short,
// with the ping first so the notification names the user.
func fallbackText(part, ping string) string {
	text := cutRunes(toMrkdwn(part), maxFallbackRunes)
	if ping != "" {
		text = "<@" + ping + "> " + text
	}
	return text
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// escapeMrkdwn escapes what Slack's mrkdwn treats as markup: it also
// keeps agent text from pinging (<!channel>, <@U…>).
func escapeMrkdwn(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

var (
	headingRE = regexp.MustCompile(`^(\s{0,3})#{1,6}\s+(.*?)\s*#*\s*$`)
	bulletRE  = regexp.MustCompile(`^(\s*)[-*+]\s+`)
	ruleRE    = regexp.MustCompile(`^\s{0,3}([-*_])(\s*([-*_])){2,}\s*$`)
	tableRE   = regexp.MustCompile(`^\s*\|.*\|\s*$`)
	quoteRE   = regexp.MustCompile(`^(\s*(?:>\s?)+)(.*)$`)
)

// toMrkdwn renders CommonMark as Slack's mrkdwn: escaped, with Slack's
// spelling of emphasis, links, headings and lists; code is kept (fences
// lose their info string, which mrkdwn lacks) and tables go in a code
// block, since mrkdwn has none.
func toMrkdwn(md string) string {
	var out []string
	inCode, inTable := false, false
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if inTable {
				out, inTable = append(out, "```"), false
			}
			inCode = !inCode
			out = append(out, "```")
			continue
		}
		if inCode {
			out = append(out, escapeMrkdwn(line))
			continue
		}
		if isTable := tableRE.MatchString(line); isTable != inTable {
			out, inTable = append(out, "```"), isTable
		}
		if inTable {
			out = append(out, escapeMrkdwn(line))
			continue
		}
		out = append(out, mrkdwnLine(line))
	}
	if inTable || inCode {
		out = append(out, "```")
	}
	return strings.Join(out, "\n")
}

// mrkdwnLine renders one line outside code.
func mrkdwnLine(line string) string {
	if ruleRE.MatchString(line) {
		return "───────────"
	}
	quote := ""
	if m := quoteRE.FindStringSubmatch(line); m != nil {
		quote, line = strings.Repeat(">", strings.Count(m[1], ">"))+" ", m[2]
	}
	if m := headingRE.FindStringSubmatch(line); m != nil {
		return quote + m[1] + "*" + inline(m[2]) + "*"
	}
	if m := bulletRE.FindStringSubmatch(line); m != nil {
		return quote + m[1] + "• " + inline(line[len(m[0]):])
	}
	return quote + inline(line)
}

var (
	codeSpanRE = regexp.MustCompile("`[^`]+`")
	imageRE    = regexp.MustCompile(`!\[([^\]]*)\]\(([^)\s]+)\)`)
	linkRE     = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
	autoLinkRE = regexp.MustCompile(`&lt;((?:https?|mailto):[^\s&]+)&gt;`)
	boldRE     = regexp.MustCompile(`\*\*([^*]+)\*\*|__([^_]+)__`)
	italicRE   = regexp.MustCompile(`\*([^*\s][^*]*)\*`)
	strikeRE   = regexp.MustCompile(`~~([^~]+)~~`)
)

// inline renders emphasis and links outside code spans, which are kept
// as they are (escaped).
func inline(s string) string {
	var b strings.Builder
	last := 0
	for _, loc := range codeSpanRE.FindAllStringIndex(s, -1) {
		b.WriteString(inlineText(s[last:loc[0]]))
		b.WriteString(escapeMrkdwn(s[loc[0]:loc[1]]))
		last = loc[1]
	}
	b.WriteString(inlineText(s[last:]))
	return b.String()
}

// bold marks bold spans while italics are rewritten, so that the "*" of
// mrkdwn bold is not read as CommonMark italics.
const bold = "\x00"

func inlineText(s string) string {
	s = escapeMrkdwn(s)
	s = imageRE.ReplaceAllStringFunc(s, func(m string) string { return slackLink(imageRE.FindStringSubmatch(m)) })
	s = linkRE.ReplaceAllStringFunc(s, func(m string) string { return slackLink(linkRE.FindStringSubmatch(m)) })
	s = autoLinkRE.ReplaceAllString(s, "<$1>")
	s = boldRE.ReplaceAllString(s, bold+"$1$2"+bold)
	s = italicRE.ReplaceAllString(s, "_${1}_")
	s = strikeRE.ReplaceAllString(s, "~$1~")
	return strings.ReplaceAll(s, bold, "*")
}

// slackLink is <url|text>, or <url> when the text would break it. Only
// web and mail URLs become links: Slack reads <!channel>, <@U…> and
// <#C…> as pings and mentions, so a link to anything else
// ([x](!channel), [b](@U0ADMIN)) stays the escaped literal text.
func slackLink(m []string) string {
	text, url := m[1], m[2]
	if !linkable(url) {
		return m[0]
	}
	if text == "" || strings.ContainsAny(text, "|") || strings.Contains(text, "&gt;") {
		return "<" + url + ">"
	}
	return "<" + url + "|" + text + ">"
}

// linkable reports whether url (already escaped) may go in <url>: its
// scheme is http, https or mailto, and it holds no "|" that would end the
// URL early.
func linkable(url string) bool {
	scheme, _, ok := strings.Cut(url, ":")
	if !ok || strings.Contains(url, "|") {
		return false
	}
	switch strings.ToLower(scheme) {
	case "http", "https", "mailto":
		return true
	}
	return false
}
