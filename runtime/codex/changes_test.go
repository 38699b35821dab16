package codex

import (
	"encoding/json"
	"testing"
)

// An approval request shows what it would allow beyond its command: the
// grant root, the network host, and whether it asks for extra
// permissions (a profile of nulls asks for none).
func TestParseApprovalReadsWhatItAllows(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		want         ApprovalRequest
	}{
		{"plain", `{"threadId":"T","itemId":"i","command":"ls","additionalPermissions":null,"networkApprovalContext":null}`,
			ApprovalRequest{Kind: "command", ThreadID: "T", ItemID: "i", Command: "ls"}},
		{"empty profile", `{"threadId":"T","additionalPermissions":{"fileSystem":null,"network":null}}`,
			ApprovalRequest{Kind: "command", ThreadID: "T"}},
		{"extra", `{"threadId":"T","additionalPermissions":{"fileSystem":{"write":["/"]}}}`,
			ApprovalRequest{Kind: "command", ThreadID: "T", ExtraPermissions: true}},
		{"network", `{"threadId":"T","networkApprovalContext":{"host":"x.example","protocol":"https"}}`,
			ApprovalRequest{Kind: "command", ThreadID: "T", Network: "x.example"}},
		{"network without host", `{"threadId":"T","networkApprovalContext":{"host":"","protocol":"https"}}`,
			ApprovalRequest{Kind: "command", ThreadID: "T", Network: "(unnamed host)"}},
		{"grant root", `{"threadId":"T","grantRoot":"/etc","reason":"more"}`,
			ApprovalRequest{Kind: "command", ThreadID: "T", GrantRoot: "/etc", Reason: "more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseApproval("command", json.RawMessage(tc.params))
			got.Raw = nil
			if got.Kind != tc.want.Kind || got.ThreadID != tc.want.ThreadID || got.ItemID != tc.want.ItemID ||
				got.Command != tc.want.Command || got.GrantRoot != tc.want.GrantRoot || got.Reason != tc.want.Reason ||
				got.Network != tc.want.Network || got.ExtraPermissions != tc.want.ExtraPermissions {
				t.Errorf("parseApproval = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The files of a fileChange item are known from its item/started until
// its item/completed or its turn's end, per thread.
func TestChangeBookKeepsAFileChangesPaths(t *testing.T) {
	var b changeBook
	item := json.RawMessage(`{"type":"fileChange","id":"c1","status":"inProgress","changes":[{"path":"/w/a.txt","kind":{"type":"add"},"diff":"x\n"}]}`)
	b.note("T", true, item)
	b.note("T", true, json.RawMessage(`{"type":"commandExecution","id":"c2","command":"ls"}`))
	if got := b.of("T", "c1"); len(got) != 1 || got[0].Path != "/w/a.txt" || got[0].Kind != "add" {
		t.Fatalf("files of c1: %+v", got)
	}
	if got := b.of("U", "c1"); got != nil {
		t.Errorf("another thread's c1: %+v", got)
	}
	b.note("T", false, item)
	if got := b.of("T", "c1"); got != nil {
		t.Errorf("after item/completed: %+v", got)
	}
	b.note("T", true, item)
	b.forget("T")
	if got := b.of("T", "c1"); got != nil {
		t.Errorf("after the turn ended: %+v", got)
	}
}
