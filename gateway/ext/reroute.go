package ext

import (
	"strings"
	"unicode"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// RerouteLine is the line about r that the lane, its work view and its
// transcript show (feature/reroute, feature/workview).
func RerouteLine(r codex.Reroute) string {
	from := r.From
	if from == "" {
		from = "the model asked for"
	}
	line := "Answered by " + r.To + " instead of " + from
	if why := reasonWords(r.Reason); why != "" {
		line += ": " + why
	}
	return line + "."
}

// reasonWords says codex's ModelRerouteReason in words.
func reasonWords(reason string) string {
	switch reason {
	case "":
		return ""
	case "highRiskCyberActivity":
		return "the request was flagged as high-risk cyber activity"
	}
	// A reason newer than this gatewayd: its camelCase as words.
	var b strings.Builder
	for i, r := range reason {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
