package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The fence between a lane's commits and its rollout: the store records
// each committed turn with the thread whose rollout holds it, so whoever
// moves a lane can tell whether the shipped rollout covers the lane's
// last committed turn. A live owner ships before it lets a lane go and
// holds on to the lane until the shipped rollout covers it (ShipCovering);
// a node taking a lane whose owner died between a commit and its ship
// restores what was shipped and rebuilds the turns it lacks from the
// transcript (RestoreCovering), so codex resumes with every turn the lane
// was answered, if without the tool calls of the rebuilt ones.

// ErrTurnNotShipped: the shipped rollout does not yet hold the turn the
// lane committed last (codex has not written its end to the file yet).
var ErrTurnNotShipped = errors.New("cluster: the shipped rollout does not cover the lane's last committed turn")

// CommittedTurn is a turn the lane committed on a thread: what its rollout
// must hold, and what a rebuild writes when it does not.
type CommittedTurn struct {
	TurnID    string
	User      []string // its own message, then those steered into it
	Assistant string
}

// rebuiltPrefix marks the assistant line a rebuild writes, so a later
// restore counts the turn as covered and does not write it twice.
const rebuiltPrefix = "gatewayd-rebuilt-"

// Covers reports whether rollout holds the end of turn turnID: codex's
// task_complete or turn_aborted event for it, or the turn as a rebuild
// wrote it.
func Covers(rollout []byte, turnID string) bool {
	return turnID == "" || coverEnd(rollout, turnID) >= 0
}

// coverEnd is where the line ending turn turnID in rollout ends, -1 if no
// line does. It reads from the end, where the last turns are.
func coverEnd(rollout []byte, turnID string) int {
	idKey := []byte(`"turn_id":"` + turnID + `"`)
	rebuilt := []byte(`"id":"` + rebuiltPrefix + turnID + `"`)
	for end := len(rollout); end > 0; {
		start := bytes.LastIndexByte(rollout[:end-1], '\n') + 1
		line := rollout[start:end]
		if bytes.Contains(line, rebuilt) || bytes.Contains(line, idKey) && endsTurn(line) {
			return end
		}
		end = start
	}
	return -1
}

func endsTurn(line []byte) bool {
	return bytes.Contains(line, []byte(`"type":"task_complete"`)) || bytes.Contains(line, []byte(`"type":"turn_aborted"`))
}

// uncovered are the newest of committed (newest first) that rollout lacks,
// up to the newest it holds, oldest first: the tail a dead owner never
// shipped. The rollout is append-only, so a turn it holds covers the older.
func uncovered(rollout []byte, committed []CommittedTurn) []CommittedTurn {
	var missing []CommittedTurn
	for _, t := range committed {
		if Covers(rollout, t.TurnID) {
			break
		}
		missing = append(missing, t)
	}
	for i, j := 0, len(missing)-1; i < j; i, j = i+1, j-1 {
		missing[i], missing[j] = missing[j], missing[i]
	}
	return missing
}

// rebuildLines are rollout lines for turns, as codex writes a user and an
// assistant message (response_item), numbered on from the last line's
// ordinal when the rollout numbers its lines: what codex's thread/resume
// reads back into the thread's history.
func rebuildLines(rollout []byte, turns []CommittedTurn, now time.Time) ([]byte, error) {
	ordinal, numbered := lastOrdinal(rollout)
	var b bytes.Buffer
	add := func(id, role, kind, text, turnID string) error {
		line := map[string]any{
			"timestamp": now.UTC().Format("2006-01-02T15:04:05.000Z"),
			"type":      "response_item",
			"payload": map[string]any{"type": "message", "role": role,
				"content": []map[string]string{{"type": kind, "text": text}},
				"internal_chat_message_metadata_passthrough": map[string]string{"turn_id": turnID}},
		}
		if id != "" {
			line["payload"].(map[string]any)["id"] = id
		}
		if numbered {
			ordinal++
			line["ordinal"] = ordinal
		}
		data, err := json.Marshal(line)
		if err != nil {
			return err
		}
		b.Write(data)
		b.WriteByte('\n')
		return nil
	}
	for _, t := range turns {
		for _, u := range t.User {
			if err := add("", "user", "input_text", u, t.TurnID); err != nil {
				return nil, err
			}
		}
		if err := add(rebuiltPrefix+t.TurnID, "assistant", "output_text", t.Assistant, t.TurnID); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// lastOrdinal is the "ordinal" of rollout's last line, which codex checks
// goes on line by line; numbered is false for a rollout without them.
func lastOrdinal(rollout []byte) (ordinal int64, numbered bool) {
	trimmed := bytes.TrimRight(rollout, "\n")
	last := trimmed[bytes.LastIndexByte(trimmed, '\n')+1:]
	var line struct {
		Ordinal *json.Number `json:"ordinal"`
	}
	if json.Unmarshal(last, &line) != nil || line.Ordinal == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(line.Ordinal.String(), 10, 64)
	return n, err == nil
}

// ShipCovering ships the thread's new rollout tail (Ship) and then checks
// that what is shipped covers turnID, the lane's last committed turn on
// the thread: ErrTurnNotShipped when codex has not written its end yet. A
// live owner calls it before letting a lane go.
func (r *Rollouts) ShipCovering(ctx context.Context, codexHome, threadID, turnID string, l Lease) (Shipped, error) {
	shipped, err := r.Ship(ctx, codexHome, threadID, l)
	if err != nil {
		return shipped, err
	}
	data, err := readPrefix(filepath.Join(codexHome, filepath.FromSlash(shipped.RelPath)), shipped.From+shipped.Bytes)
	if err != nil {
		return shipped, fmt.Errorf("cluster: ship %s: %w", threadID, err)
	}
	if !Covers(data, turnID) {
		return shipped, fmt.Errorf("%w: thread %s, turn %s", ErrTurnNotShipped, threadID, turnID)
	}
	return shipped, nil
}

// cover returns shipped made to cover committed (newest first): as it is
// when it does, else completed from local (coveredTail) or by rebuilt
// lines, which res records.
func cover(shipped, local []byte, committed []CommittedTurn, res *Restored) ([]byte, error) {
	missing := uncovered(shipped, committed)
	if len(missing) == 0 {
		return shipped, nil
	}
	if tail, ok := coveredTail(shipped, local, committed[0].TurnID); ok {
		res.LocalTail = true
		return tail, nil
	}
	extra, err := rebuildLines(shipped, missing, time.Now())
	if err != nil {
		return nil, err
	}
	for _, t := range missing {
		res.Rebuilt = append(res.Rebuilt, t.TurnID)
	}
	return append(shipped[:len(shipped):len(shipped)], extra...), nil
}

// coveredTail completes shipped from local, this node's own copy of the
// rollout, when local goes on from shipped to the end of turn turnID (a
// node that committed the turn itself and never shipped it, restarted on
// its CODEX_HOME): its real lines, tool calls and all, rather than a
// rebuild. What local holds after that turn was never committed.
func coveredTail(shipped, local []byte, turnID string) ([]byte, bool) {
	if !bytes.HasPrefix(local, shipped) {
		return nil, false
	}
	end := coverEnd(local, turnID)
	if end <= len(shipped) {
		return nil, false
	}
	return local[:end], true
}

func readPrefix(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, n)
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, err
	}
	return data, nil
}
