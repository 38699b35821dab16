package gateway

import "github.com/gatewayd/gatewayd/gateway/ext"

// The core's side of ext.TitleHooks: the feature that names lanes, asked
// by intake for the title it records with a message.

// titleServices are ext.TitleHooks, the extension host's (extCore embeds
// them).
type titleServices struct{ h *host }

func (s titleServices) Titles(t ext.Titler) { s.h.titles = t }

var _ ext.TitleHooks = titleServices{}

// titleOf is the title to record with in, a message of lane key.
func (h *host) titleOf(key string, in Inbound) string {
	if h.titles == nil {
		return ""
	}
	return h.titles.Title(key, in)
}

// titleRecorded tells the feature that names lanes that a message of lane
// key was recorded with title.
func (h *host) titleRecorded(key, title string) {
	if h.titles != nil && title != "" {
		h.titles.Recorded(key, title)
	}
}
