package matrix

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/matrix/matrixtest"
)

func TestMarkdownLinksAndHTMLStayInert(t *testing.T) {
	for _, src := range []string{
		"[x](javascript:alert(1))",
		"[x](JavaScript:alert(1))",
		"[x](vbscript:msgbox(1))",
		"![i](javascript:alert(1))",
		`<a href="javascript:alert(1)">x</a>`,
		`<img src=x onerror="alert(1)">`,
	} {
		c := textContent(src, "", false, "")
		low := strings.ToLower(c.FormattedBody)
		if strings.Contains(low, `href="javascript:`) || strings.Contains(low, `src="javascript:`) ||
			strings.Contains(low, "vbscript:") && strings.Contains(low, "href=") || strings.Contains(low, "<img src=x") ||
			strings.Contains(low, "<a href=\"javascript") {
			t.Errorf("%q renders live: %s", src, c.FormattedBody)
		}
		if c.Body != src {
			t.Errorf("%q: body %q", src, c.Body)
		}
	}
}

func TestContentTooLargeToFormatGoesPlain(t *testing.T) {
	src := strings.Repeat("<", 8<<10) // escapes grow it past one event once rendered
	c := renderMarkdown(src)
	if c.FormattedBody != "" || c.Format != "" || c.Body != src {
		t.Fatalf("format %q, %d bytes of formatted body", c.Format, len(c.FormattedBody))
	}
}

// TestHugeTableIsDeliveredBounded: a markdown table is not expanded into
// HTML cells (kilobytes of pipes would render to megabytes); the reply
// arrives whole in parts of bounded size.
func TestHugeTableIsDeliveredBounded(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	var b strings.Builder
	// A wide header, then short rows: each row renders every column.
	b.WriteString("|" + strings.Repeat("h|", 300) + "\n|" + strings.Repeat("-|", 300) + "\n")
	for b.Len() < 8<<10 {
		b.WriteString("x\n")
	}
	text := b.String()
	out := gateway.Outbound{ID: 9, Address: roomAddr(room), Kind: gateway.OutReply, Text: text, Parts: &partLog{}}
	if _, err := h.a.Send(t.Context(), out); err != nil {
		t.Fatal(err)
	}
	sent := srv.Sent(room, matrixtest.BotUser, "m.room.message")
	var got strings.Builder
	for _, e := range sent {
		raw, _ := json.Marshal(e.Content)
		if len(raw) > maxContentBytes {
			t.Fatalf("a part of %d bytes", len(raw))
		}
		body, _ := e.Content["body"].(string)
		got.WriteString(body)
	}
	if got.String() != text {
		t.Fatalf("delivered %d of %d bytes", got.Len(), len(text))
	}
}
