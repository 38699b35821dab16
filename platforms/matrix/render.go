package matrix

import (
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/format"
	"maunium.net/go/mautrix/format/mdext"
)

// markdown renders Codex's markdown for formatted_body. Unlike mautrix's
// defaults it has no table extension (a few KiB of "|" cells render to
// megabytes of HTML, then the event is refused as too large) and no
// WithUnsafe (javascript: and similar links stay dead); raw HTML is shown
// escaped, as text.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.Strikethrough, mdext.Spoiler, mdext.EscapeHTML),
	goldmark.WithRendererOptions(gmhtml.WithHardWraps()),
)

// formattedSlack is what an event adds around a part's content: relations,
// the edit envelope, the choices map.
const formattedSlack = 4 << 10

// renderMarkdown renders src as an m.room.message content; when the HTML
// would not fit in one event, the content is plain text only — the body
// (the markdown verbatim) is always there, so nothing is lost.
func renderMarkdown(src string) event.MessageEventContent {
	c := format.RenderMarkdownCustom(src, markdown)
	if c.Format != "" && measure(&c) > maxContentBytes-formattedSlack {
		c.Format, c.FormattedBody = "", ""
	}
	return c
}
