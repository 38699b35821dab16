package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

const testLane = "v1:telegram:topic:-100123:42"

// pngHead is the start of a PNG file: enough for content sniffing.
const pngHead = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"

func newTestStore(t *testing.T, limits Limits, inUse InUse) *Store {
	t.Helper()
	return New(filepath.Join(t.TempDir(), "files"), limits, inUse)
}

func mustSave(t *testing.T, s *Store, message, name string, data []byte) Saved {
	t.Helper()
	saved, err := s.Save(context.Background(), testLane, message, name, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Save(%q, %q): %v", message, name, err)
	}
	return saved
}

// entries lists dir's entries by name, or nil when dir does not exist.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name())
	}
	return names
}

func TestNewAppliesDefaults(t *testing.T) {
	got := New(t.TempDir(), Limits{MaxBytes: -1}, nil).Limits()
	if want := (Limits{MaxBytes: DefaultMaxBytes, LaneQuota: DefaultLaneQuota}); got != want {
		t.Fatalf("Limits() = %+v, want %+v", got, want)
	}
}

func TestSaveStoresUnderLaneAndMessage(t *testing.T) {
	s := newTestStore(t, Limits{}, nil)
	data := []byte(pngHead + "rest of the image")
	saved := mustSave(t, s, "-77", "../../../etc/evil\u202egnp.png", data)

	wantPath := filepath.Join(s.root, dirName(testLane), dirName("-77"), "evilgnp.png")
	if saved.Path != wantPath || saved.Name != "evilgnp.png" {
		t.Fatalf("saved at %q as %q, want %q", saved.Path, saved.Name, wantPath)
	}
	if saved.Size != int64(len(data)) || saved.MIME != "image/png" || !saved.IsImage {
		t.Fatalf("saved = %+v, want %d bytes of image/png", saved, len(data))
	}
	got, err := os.ReadFile(saved.Path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("stored bytes = %q, %v; want %q", got, err, data)
	}
	if dir := filepath.Dir(saved.Path); dir != s.MessageDir(testLane, "-77") || filepath.Dir(dir) != s.LaneDir(testLane) {
		t.Fatalf("%q is not in the message directory of the lane", saved.Path)
	}
}

func TestSaveNeverOverwrites(t *testing.T) {
	long := strings.Repeat("x", 251) + ".txt"
	tests := []struct {
		name  string
		names []string
		want  []string
	}{
		{"same name thrice", []string{"a.txt", "a.txt", "a.txt"}, []string{"a.txt", "a (2).txt", "a (3).txt"}},
		{"no extension", []string{"README", "README"}, []string{"README", "README (2)"}},
		{"same after sanitising", []string{"x/a.txt", "y\\a.txt", "\u202ea.txt"}, []string{"a.txt", "a (2).txt", "a (3).txt"}},
		{"long name stays within 255 bytes", []string{long, long}, []string{long, strings.Repeat("x", 247) + " (2).txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t, Limits{}, nil)
			for i, name := range tt.names {
				saved := mustSave(t, s, "m1", name, []byte(fmt.Sprint("copy ", i)))
				if saved.Name != tt.want[i] {
					t.Errorf("save %d of %q stored as %q, want %q", i, name, saved.Name, tt.want[i])
				}
			}
			for i, name := range tt.want {
				got, err := os.ReadFile(filepath.Join(s.MessageDir(testLane, "m1"), name))
				if want := fmt.Sprint("copy ", i); err != nil || string(got) != want {
					t.Errorf("%q holds %q, %v; want %q", name, got, err, want)
				}
			}
		})
	}
}

func TestSaveConcurrentSameNameKeepsEveryFile(t *testing.T) {
	s := newTestStore(t, Limits{}, nil)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Save(context.Background(), testLane, "m1", "same.bin", strings.NewReader(fmt.Sprint(i)))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := entries(t, s.MessageDir(testLane, "m1")); len(got) != n {
		t.Fatalf("message holds %d files, want %d: %q", len(got), n, got)
	}
}

// failingReader yields data, then fails.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestSaveFailureLeavesNothing(t *testing.T) {
	const limit = 1000
	errDropped := errors.New("connection dropped")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		r       io.Reader
		wantErr func(error) bool
	}{
		{"one byte over the limit", context.Background(), bytes.NewReader(make([]byte, limit+1)), func(err error) bool {
			var tooLarge *TooLargeError
			return errors.As(err, &tooLarge) && tooLarge.Limit == limit && tooLarge.Got > limit
		}},
		{"far over the limit", context.Background(), io.LimitReader(zeros{}, 10*limit), func(err error) bool {
			var tooLarge *TooLargeError
			return errors.As(err, &tooLarge)
		}},
		{"reader fails mid-stream", context.Background(), &failingReader{make([]byte, limit/2), errDropped}, func(err error) bool {
			return errors.Is(err, errDropped)
		}},
		{"context cancelled", cancelled, bytes.NewReader(make([]byte, 10)), func(err error) bool {
			return errors.Is(err, context.Canceled)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name+", first file", func(t *testing.T) {
			s := newTestStore(t, Limits{MaxBytes: limit}, nil)
			_, err := s.Save(tt.ctx, testLane, "m1", "a.bin", tt.r)
			if !tt.wantErr(err) {
				t.Fatalf("Save error = %v", err)
			}
			if got := entries(t, s.LaneDir(testLane)); len(got) != 0 {
				t.Fatalf("lane holds %q after a failed save, want nothing", got)
			}
		})
	}
	t.Run("a failed second file keeps the first", func(t *testing.T) {
		s := newTestStore(t, Limits{MaxBytes: limit}, nil)
		mustSave(t, s, "m1", "a.bin", []byte("kept"))
		if _, err := s.Save(context.Background(), testLane, "m1", "a.bin", &failingReader{[]byte("half"), errDropped}); !errors.Is(err, errDropped) {
			t.Fatalf("Save error = %v, want %v", err, errDropped)
		}
		if got := entries(t, s.MessageDir(testLane, "m1")); len(got) != 1 || got[0] != "a.bin" {
			t.Fatalf("message holds %q, want only a.bin", got)
		}
	})
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestSaveAtExactlyTheLimit(t *testing.T) {
	s := newTestStore(t, Limits{MaxBytes: 1000}, nil)
	if saved := mustSave(t, s, "m1", "a.bin", make([]byte, 1000)); saved.Size != 1000 {
		t.Fatalf("Size = %d, want 1000", saved.Size)
	}
}

func TestSaveInvalid(t *testing.T) {
	s := newTestStore(t, Limits{}, nil)
	for _, ids := range [][2]string{{"", "m1"}, {testLane, ""}} {
		if _, err := s.Save(context.Background(), ids[0], ids[1], "a", strings.NewReader("x")); !errors.Is(err, ErrInvalid) {
			t.Errorf("Save(lane %q, message %q) = %v, want ErrInvalid", ids[0], ids[1], err)
		}
	}
}

// existing is a message already stored before the save under test; age
// orders messages (higher is older).
type existing struct {
	message string
	size    int
	age     int
}

// fillLane saves each message's bytes and backdates its directory, so
// "oldest" is decided by the test rather than by the clock's resolution.
func fillLane(t *testing.T, s *Store, messages []existing) {
	t.Helper()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, m := range messages {
		mustSave(t, s, m.message, "f.bin", make([]byte, m.size))
		when := base.Add(-time.Duration(m.age) * time.Hour)
		if err := os.Chtimes(s.MessageDir(testLane, m.message), when, when); err != nil {
			t.Fatal(err)
		}
	}
}

// storedMessages returns which of the candidate message ids still have a
// directory in the lane.
func storedMessages(t *testing.T, s *Store, candidates []string) []string {
	t.Helper()
	var left []string
	for _, m := range candidates {
		if _, err := os.Stat(s.MessageDir(testLane, m)); err == nil {
			left = append(left, m)
		}
	}
	sort.Strings(left)
	return left
}

func TestSaveQuota(t *testing.T) {
	tests := []struct {
		name      string
		messages  []existing
		inUse     []string
		saveTo    string
		saveBytes int
		wantQuota bool     // a *QuotaError
		wantLeft  []string // message directories afterwards
	}{
		{
			name:     "fits without pruning",
			messages: []existing{{"m1", 30, 2}, {"m2", 30, 1}},
			saveTo:   "new", saveBytes: 40,
			wantLeft: []string{"m1", "m2", "new"},
		},
		{
			name:     "prunes the oldest first",
			messages: []existing{{"m2", 40, 1}, {"m1", 40, 2}},
			saveTo:   "new", saveBytes: 30,
			wantLeft: []string{"m2", "new"},
		},
		{
			name:     "prunes only as much as needed",
			messages: []existing{{"m1", 30, 3}, {"m2", 30, 2}, {"m3", 30, 1}},
			saveTo:   "new", saveBytes: 30,
			wantLeft: []string{"m2", "m3", "new"},
		},
		{
			name:     "prunes several when one is not enough",
			messages: []existing{{"m1", 20, 3}, {"m2", 20, 2}, {"m3", 50, 1}},
			saveTo:   "new", saveBytes: 50,
			wantLeft: []string{"m3", "new"},
		},
		{
			name:     "skips a message in use",
			messages: []existing{{"m1", 40, 2}, {"m2", 40, 1}},
			inUse:    []string{"m1"},
			saveTo:   "new", saveBytes: 30,
			wantLeft: []string{"m1", "new"},
		},
		{
			name:     "refuses when messages in use fill it, removing nothing",
			messages: []existing{{"m1", 40, 3}, {"m2", 40, 2}, {"m3", 10, 1}},
			inUse:    []string{"m1", "m2"},
			saveTo:   "new", saveBytes: 30,
			wantQuota: true,
			wantLeft:  []string{"m1", "m2", "m3"},
		},
		{
			name:     "never prunes the message being saved into",
			messages: []existing{{"m1", 80, 1}},
			saveTo:   "m1", saveBytes: 30,
			wantQuota: true,
			wantLeft:  []string{"m1"},
		},
		{
			name:      "refuses a file larger than the quota",
			saveTo:    "new",
			saveBytes: 101,
			wantQuota: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inUse := func(lane string) []string {
				if lane != testLane {
					t.Errorf("inUse asked about lane %q", lane)
				}
				return tt.inUse
			}
			s := newTestStore(t, Limits{MaxBytes: 1000, LaneQuota: 100}, inUse)
			fillLane(t, s, tt.messages)

			_, err := s.Save(context.Background(), testLane, tt.saveTo, "g.bin", bytes.NewReader(make([]byte, tt.saveBytes)))
			var quota *QuotaError
			if got := errors.As(err, &quota); got != tt.wantQuota || (!got && err != nil) {
				t.Fatalf("Save error = %v, want a QuotaError: %v", err, tt.wantQuota)
			}
			if quota != nil && quota.Quota != 100 {
				t.Errorf("QuotaError.Quota = %d, want 100", quota.Quota)
			}
			candidates := []string{"m1", "m2", "m3", "new"}
			if got := storedMessages(t, s, candidates); fmt.Sprint(got) != fmt.Sprint(tt.wantLeft) {
				t.Errorf("messages left = %q, want %q", got, tt.wantLeft)
			}
			if tt.wantQuota {
				if _, err := os.Stat(filepath.Join(s.MessageDir(testLane, tt.saveTo), "g.bin")); err == nil {
					t.Errorf("a refused file was stored")
				}
			}
		})
	}
}

func TestSaveQuotaIsPerLane(t *testing.T) {
	s := newTestStore(t, Limits{LaneQuota: 100}, nil)
	mustSave(t, s, "m1", "a.bin", make([]byte, 80))
	if _, err := s.Save(context.Background(), "v1:discord:channel:1:user:2", "m1", "b.bin", bytes.NewReader(make([]byte, 80))); err != nil {
		t.Fatalf("a save in another lane: %v", err)
	}
	if got := storedMessages(t, s, []string{"m1"}); len(got) != 1 {
		t.Fatalf("a save in another lane pruned this one")
	}
}

func TestPrune(t *testing.T) {
	tests := []struct {
		name      string
		inUse     []string
		budget    int64
		wantFreed int64
		wantQuota bool
		wantLeft  []string
	}{
		{"within budget", nil, 100, 0, false, []string{"m1", "m2", "m3"}},
		{"down to the budget", nil, 35, 40, false, []string{"m3"}},
		{"everything not in use", []string{"m2"}, 0, 0, true, []string{"m1", "m2", "m3"}},
		{"empty the lane", nil, 0, 60, false, nil},
		{"around a message in use", []string{"m1"}, 20, 40, false, []string{"m1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t, Limits{}, func(string) []string { return tt.inUse })
			fillLane(t, s, []existing{{"m1", 20, 3}, {"m2", 20, 2}, {"m3", 20, 1}})
			freed, err := s.Prune(testLane, tt.budget)
			var quota *QuotaError
			if errors.As(err, &quota) != tt.wantQuota || (!tt.wantQuota && err != nil) {
				t.Fatalf("Prune error = %v, want a QuotaError: %v", err, tt.wantQuota)
			}
			if freed != tt.wantFreed {
				t.Errorf("freed %d bytes, want %d", freed, tt.wantFreed)
			}
			if got := storedMessages(t, s, []string{"m1", "m2", "m3"}); fmt.Sprint(got) != fmt.Sprint(tt.wantLeft) {
				t.Errorf("messages left = %q, want %q", got, tt.wantLeft)
			}
		})
	}
}

// outCopy makes an out copy of size bytes through Store.CopyOut, backdated
// age hours like fillLane's messages, and releases CopyOut's hold unless
// told to keep it.
func outCopy(t *testing.T, s *Store, name string, size, age int, keepHeld bool) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(src, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	path, err := s.CopyOut(testLane, src, []string{filepath.Dir(src)})
	if err != nil {
		t.Fatalf("CopyOut(%s): %v", name, err)
	}
	when := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Duration(age) * time.Hour)
	if err := os.Chtimes(path, when, when); err != nil {
		t.Fatal(err)
	}
	if !keepHeld {
		s.Release(path)
	}
	return path
}

// TestPruneCountsOutCopies: out copies count in the lane's quota and go
// with its messages, oldest first, one copy at a time.
func TestPruneCountsOutCopies(t *testing.T) {
	s := newTestStore(t, Limits{}, nil)
	fillLane(t, s, []existing{{"m1", 20, 5}, {"m2", 20, 3}, {"m3", 20, 1}})
	outCopy(t, s, "old.bin", 20, 4, false)
	outCopy(t, s, "new.bin", 20, 2, false)

	// 100 bytes on disk; 50 allowed: m1 (5h), old.bin (4h) and m2 (3h) go.
	freed, err := s.Prune(testLane, 50)
	if err != nil || freed != 60 {
		t.Fatalf("Prune = %d, %v; want 60 bytes freed (out copies counted)", freed, err)
	}
	if got := storedMessages(t, s, []string{"m1", "m2", "m3"}); fmt.Sprint(got) != "[m3]" {
		t.Errorf("messages left = %q, want [m3]", got)
	}
	if got := entries(t, s.OutDir(testLane)); fmt.Sprint(got) != "[new.bin]" {
		t.Errorf("out copies left = %q, want [new.bin]: the oldest goes first", got)
	}
}

// TestPruneKeepsOutCopiesStillToBeSent: a copy whose outbox row is not
// delivered (OutInUse) or whose turn has not committed it (CopyOut's hold
// until Release) survives any prune; the message directories around it go.
func TestPruneKeepsOutCopiesStillToBeSent(t *testing.T) {
	var pending []string
	s := newTestStore(t, Limits{}, nil)
	s.SetOutInUse(func(lane string) ([]string, error) {
		if lane != testLane {
			t.Errorf("OutInUse asked about %q", lane)
		}
		return pending, nil
	})
	fillLane(t, s, []existing{{"m1", 10, 1}})
	queued := outCopy(t, s, "queued.bin", 10, 9, false)
	inTurn := outCopy(t, s, "in-turn.bin", 10, 8, true)
	outCopy(t, s, "sent.bin", 10, 7, false)
	pending = []string{queued}

	if freed, err := s.Prune(testLane, 20); err != nil || freed != 20 {
		t.Fatalf("Prune = %d, %v; want the delivered copy and m1 (20 bytes) freed", freed, err)
	}
	if got := entries(t, s.OutDir(testLane)); fmt.Sprint(got) != "[in-turn.bin queued.bin]" {
		t.Errorf("out copies left = %q, want the held and the pending one", got)
	}
	var quota *QuotaError
	if _, err := s.Prune(testLane, 0); !errors.As(err, &quota) || quota.Kept != 20 {
		t.Fatalf("Prune(0) = %v, want a QuotaError keeping the 20 bytes still to be sent", err)
	}
	// Committed and delivered: the hold is released, the row no longer
	// pending; now the copies may go.
	s.Release(inTurn)
	pending = nil
	if freed, err := s.Prune(testLane, 0); err != nil || freed != 20 {
		t.Fatalf("Prune after delivery = %d, %v; want 20 bytes freed", freed, err)
	}
}

// TestPruneKeepsEveryOutCopyWhenInUseUnknown: a failed OutInUse keeps all
// of the lane's out copies; its messages are pruned as before.
func TestPruneKeepsEveryOutCopyWhenInUseUnknown(t *testing.T) {
	s := newTestStore(t, Limits{}, nil)
	s.SetOutInUse(func(string) ([]string, error) { return nil, errors.New("database gone") })
	fillLane(t, s, []existing{{"m1", 10, 1}})
	outCopy(t, s, "a.bin", 10, 5, false)
	if freed, err := s.Prune(testLane, 10); err != nil || freed != 10 {
		t.Fatalf("Prune = %d, %v; want m1's 10 bytes freed", freed, err)
	}
	if got := entries(t, s.OutDir(testLane)); fmt.Sprint(got) != "[a.bin]" {
		t.Errorf("out copies left = %q, want a.bin kept", got)
	}
}

// TestCopyOutMakesRoomInTheQuota: a copy is charged to the lane's quota,
// pruning old messages for it, and refused when the lane cannot fit it.
func TestCopyOutMakesRoomInTheQuota(t *testing.T) {
	s := newTestStore(t, Limits{LaneQuota: 30}, func(string) []string { return []string{"kept"} })
	fillLane(t, s, []existing{{"old", 20, 2}, {"kept", 10, 1}})
	outCopy(t, s, "fits.bin", 20, 0, false)
	if got := storedMessages(t, s, []string{"old", "kept"}); fmt.Sprint(got) != "[kept]" {
		t.Errorf("messages left = %q, want [kept]: old pruned for the copy", got)
	}
	src := filepath.Join(t.TempDir(), "huge.bin")
	if err := os.WriteFile(src, make([]byte, 25), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := s.CopyOut(testLane, src, []string{filepath.Dir(src)})
	var refused *RefusedError
	var quota *QuotaError
	if !errors.As(err, &refused) || !errors.As(err, &quota) {
		t.Fatalf("CopyOut over the quota = %v, want a RefusedError wrapping a QuotaError", err)
	}
	if got := entries(t, s.OutDir(testLane)); fmt.Sprint(got) != "[fits.bin]" {
		t.Errorf("out directory holds %q after a refused copy, want fits.bin only", got)
	}
}

// TestPruneRemovesACrashedCopysTemporaryFile: a temporary file in out/
// with no copy in progress was left by a crash; it counts and goes.
func TestPruneRemovesACrashedCopysTemporaryFile(t *testing.T) {
	s := newTestStore(t, Limits{}, nil)
	mustMkdir(t, s.OutDir(testLane))
	mustWrite(t, filepath.Join(s.OutDir(testLane), tempPrefix+"123"), "0123456789")
	if freed, err := s.Prune(testLane, 0); err != nil || freed != 10 {
		t.Fatalf("Prune = %d, %v; want the leftover's 10 bytes freed", freed, err)
	}
}

func TestSaveKeepsHostileNamesInside(t *testing.T) {
	s := newTestStore(t, Limits{}, nil)
	dir := s.MessageDir(testLane, "m1")
	for _, name := range []string{"..", ".", "", "../../../x", "/etc/passwd", `..\..\win.ini`, "\x00", "\u202e", "-", ".partial-x"} {
		saved := mustSave(t, s, "m1", name, []byte("x"))
		if filepath.Dir(saved.Path) != dir || strings.HasPrefix(saved.Name, ".") || strings.HasPrefix(saved.Name, "-") {
			t.Errorf("%q stored as %q at %q, want a plain name in %q", name, saved.Name, saved.Path, dir)
		}
	}
}

// inspectingReader runs inspect once, part-way through the stream.
type inspectingReader struct {
	r       io.Reader
	inspect func()
}

func (r *inspectingReader) Read(p []byte) (int, error) {
	if r.inspect != nil {
		r.inspect()
		r.inspect = nil
	}
	return r.r.Read(p)
}

// TestSaveStreamsUnderATemporaryName: while bytes arrive the final name does
// not exist, so a crash cannot leave half a file under it.
func TestSaveStreamsUnderATemporaryName(t *testing.T) {
	s := newTestStore(t, Limits{}, nil)
	dir := s.MessageDir(testLane, "m1")
	var during []string
	r := &inspectingReader{r: strings.NewReader("some bytes"), inspect: func() { during = entries(t, dir) }}
	if _, err := s.Save(context.Background(), testLane, "m1", "a.txt", r); err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || !strings.HasPrefix(during[0], tempPrefix) {
		t.Fatalf("while streaming the message held %q, want one %s file", during, tempPrefix)
	}
	if after := entries(t, dir); len(after) != 1 || after[0] != "a.txt" {
		t.Fatalf("after the save the message holds %q, want a.txt only", after)
	}
}
