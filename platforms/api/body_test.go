package api

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func TestBodyMediaTypeAndSize(t *testing.T) {
	t.Parallel()
	p, sink := startGuarded(t, nil, nil)
	huge := `{"text":"` + strings.Repeat("x", maxBody) + `"}`
	tests := []struct {
		name, path, contentType, body string
		chunked                       bool
		want                          int
		wantErr                       string
	}{
		{"json", "/api/lanes/demo/messages", "application/json", `{"text":"hi"}`, false, 200, ""},
		{"json with charset", "/api/lanes/demo/messages", "application/json; charset=utf-8", `{"text":"hi"}`, false, 200, ""},
		{"media type in upper case", "/api/lanes/demo/messages", "Application/JSON", `{"text":"hi"}`, false, 200, ""},
		{"text/plain", "/api/lanes/demo/messages", "text/plain", `{"text":"hi"}`, false, 415, "application/json"},
		{"form", "/api/lanes/demo/messages", "application/x-www-form-urlencoded", `text=hi`, false, 415, "application/json"},
		{"empty multipart", "/api/lanes/demo/messages", "multipart/form-data; boundary=x", `--x--`, false, 400, "text is empty"},
		{"multipart/mixed", "/api/lanes/demo/messages", "multipart/mixed; boundary=x", `--x--`, false, 415, "multipart/form-data"},
		{"no content type", "/api/lanes/demo/messages", "", `{"text":"hi"}`, false, 415, "application/json"},
		{"json-looking suffix", "/api/lanes/demo/messages", "application/json-patch+json", `{"text":"hi"}`, false, 415, "application/json"},
		{"decision as text/plain", "/api/lanes/demo/approvals/a1", "text/plain", `{"decision":"accept"}`, false, 415, "application/json"},
		{"oversized, declared", "/api/lanes/demo/messages", "application/json", huge, false, 413, strconv.Itoa(maxBody) + " bytes"},
		{"oversized, chunked", "/api/lanes/demo/messages", "application/json", huge, true, 413, strconv.Itoa(maxBody) + " bytes"},
		{"oversized decision", "/api/lanes/demo/approvals/a1", "application/json",
			`{"decision":"` + strings.Repeat("x", maxDecisionBody) + `"}`, false, 413, strconv.Itoa(maxDecisionBody) + " bytes"},
		{"answer as text/plain", "/api/lanes/demo/questions/q1", "text/plain", `{"answers":{"a":["b"]}}`, false, 415, "application/json"},
		{"oversized answer, chunked", "/api/lanes/demo/questions/q1", "application/json",
			`{"answers":{"a":["` + strings.Repeat("x", maxAnswerBody) + `"]}}`, true, 413, strconv.Itoa(maxAnswerBody) + " bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = io.MultiReader(body) // unknown length: sent chunked
			}
			req, _ := http.NewRequest("POST", "http://"+p.Addr()+tt.path, body)
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tt.want, got)
			}
			if tt.wantErr != "" && !strings.Contains(string(got), tt.wantErr) {
				t.Errorf("answer %s does not mention %q", got, tt.wantErr)
			}
		})
	}
	if n := sink.received(); n != 3 {
		t.Errorf("%d messages reached the gateway, want the 3 JSON ones", n)
	}
}

func TestBodyRuleAccepts(t *testing.T) {
	t.Parallel()
	rule := bodyRule{mediaTypes: []string{"application/json", "multipart/form-data"}, maxBytes: 1}
	tests := []struct {
		contentType string
		want        bool
	}{
		{"application/json", true},
		{"multipart/form-data; boundary=abc", true},
		{"text/plain; charset=utf-8", false},
		{"application/json; charset", false}, // a broken parameter
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			if got := rule.accepts(tt.contentType); got != tt.want {
				t.Errorf("accepts(%q) = %v, want %v", tt.contentType, got, tt.want)
			}
		})
	}
}
