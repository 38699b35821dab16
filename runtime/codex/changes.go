package codex

import (
	"bytes"
	"encoding/json"
	"sync"
)

// changeBook remembers the files of each fileChange item between its
// item/started and item/completed: item/fileChange/requestApproval names
// only the item, and whoever decides must see what it writes. The reader
// notes the item before it reads the request that follows it, so the
// request always finds it.
type changeBook struct {
	mu    sync.Mutex
	items map[string][]FileChange // threadID "\x00" itemID → files
}

// note records (started) or drops the fileChange item raw of threadID.
func (b *changeBook) note(threadID string, started bool, raw json.RawMessage) {
	if threadID == "" || !bytes.Contains(raw, []byte(`"fileChange"`)) {
		return // the common case: not a file change, not decoded twice
	}
	p, ok := itemProgress(raw, !started)
	if !ok || p.Action == nil || p.Action.Type != ActionFileEdit {
		return
	}
	key := threadID + "\x00" + p.Action.ID
	b.mu.Lock()
	defer b.mu.Unlock()
	if !started {
		delete(b.items, key)
		return
	}
	if b.items == nil {
		b.items = make(map[string][]FileChange)
	}
	b.items[key] = p.Action.Files
}

// of is the files of threadID's item itemID (nil when not known).
func (b *changeBook) of(threadID, itemID string) []FileChange {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.items[threadID+"\x00"+itemID]
}

// forget drops threadID's items: a completed turn closes every open item,
// including those that never get item/completed (docs/codex-app-server.md §10.5).
func (b *changeBook) forget(threadID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.items {
		if len(k) > len(threadID) && k[:len(threadID)] == threadID && k[len(threadID)] == 0 {
			delete(b.items, k)
		}
	}
}
