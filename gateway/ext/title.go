package ext

import "github.com/gatewayd/gatewayd/gateway/chat"

// TitleHooks are where a feature names lanes: a lane's title (its meta
// "title") names it in the console's lane list, and is set in the commit
// that records a message (store.Inbound.LaneTitle).
type TitleHooks interface {
	// Titles makes t what names the lanes (the last one registered); with
	// none, no lane is named.
	Titles(t Titler)
}

// Titler names lanes by their messages.
type Titler interface {
	// Title is the title to record with in, a message of the lane whose
	// session key is key; "" records none.
	Title(key string, in chat.Inbound) string
	// Recorded tells that in's message of lane key was recorded with
	// title (not ""): the lane has a title now, this one or an earlier one.
	Recorded(key, title string)
}
