package codex

import (
	"encoding/json"
	"testing"
)

// decodeDeltaJSON is what decodeTurnLine does with a delta line without
// the fast path.
func decodeDeltaJSON(line []byte) (agentDelta, bool) {
	var l struct {
		Params *agentDelta `json:"params"`
	}
	if json.Unmarshal(line, &l) != nil || l.Params == nil {
		return agentDelta{}, false
	}
	return *l.Params, true
}

var deltaLines = []string{
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","turnId":"U","itemId":"msg_1","delta":"ECHO: hi"}}`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"01a23240-25a8","turnId":"01a2-25c1","itemId":"msg_fake_1","delta":" word"},"emittedAtMs":1796139394784}` + "\n",
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","turnId":"U","delta":"line\nnext \"quoted\" back\\slash \/ tab\t é ✓"}}`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","turnId":"U","delta":"\u00e9 \ud83d\ude00"}}`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","THREADID":"X","delta":"d"}}`,
	`{"method":"item/agentMessage/delta","PARAMS":{"threadId":"T","delta":"d"}}`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","delta":"a"},"params":{"turnId":"U"}}`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","delta":"a"},"params":null}`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","n":1,"delta":"a"}}`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","delta":"a"},"x":[1,2]}`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","delta":"a"}} trailing`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","delta":"a"},"e":-0.5e+3}`,
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","delta":"a"},"e":01}`,
	"{\"method\":\"item/agentMessage/delta\",\"params\":{\"threadId\":\"T\",\"delta\":\"\xff\"}}",
	"{\"method\":\"item/agentMessage/delta\",\"params\":{\"threadId\":\"T\",\"delta\":\"a\x01\"}}",
	` { "method" : "item/agentMessage/delta" , "params" : { "threadId" : "T" , "delta" : "a" } } `,
	`{"method":"item/agentMessage/delta","params":{"threadId":"T","delta":"unterminated}}`,
	`{"method":"item/agentMessage/delta","params":{}}`,
	`{"method":"item/agentMessage/delta","params":{"\"threadId\"":"x","thre\/adId":"y","threadId":"T","delta":"a"}}`,
	`{"method":"item/agentMessage/delta","params":{"thread\u0049d":"x","delta":"a"}}`,
	`{"method":"item/agentMessage/delta"}`,
}

// The fast path reads the common delta lines, and whatever it accepts it
// reads exactly as encoding/json does; what it refuses (escapes it does
// not decode, other shapes) goes to encoding/json.
func TestDecodeDeltaLineMatchesEncodingJSON(t *testing.T) {
	for _, line := range deltaLines[:3] {
		if _, ok := decodeDeltaLine([]byte(line)); !ok {
			t.Errorf("fast path refused a plain delta line: %s", line)
		}
	}
	for _, line := range deltaLines {
		checkDeltaLine(t, []byte(line))
	}
}

func checkDeltaLine(t *testing.T, line []byte) {
	t.Helper()
	e, ok := decodeDeltaLine(line)
	if !ok {
		return
	}
	want, valid := decodeDeltaJSON(line)
	if !valid {
		t.Fatalf("fast path accepted a line encoding/json refuses: %q", line)
	}
	if got := (agentDelta{ThreadID: e.ThreadID, TurnID: e.TurnID, Delta: e.Delta}); got != want {
		t.Fatalf("%q: fast path read %+v, encoding/json %+v", line, got, want)
	}
}

func FuzzDeltaLine(f *testing.F) {
	for _, line := range deltaLines {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkDeltaLine(t, line) })
}

func BenchmarkDecodeDeltaLine(b *testing.B) {
	line := []byte(deltaLines[1])
	for _, tc := range []struct {
		name   string
		decode func([]byte) bool
	}{
		{"fast", func(l []byte) bool { _, ok := decodeDeltaLine(l); return ok }},
		{"encoding-json", func(l []byte) bool { _, ok := decodeDeltaJSON(l); return ok }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !tc.decode(line) {
					b.Fatal("refused")
				}
			}
		})
	}
}
