package store

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
)

// BenchmarkFloor measures the CPU (user + system, rusage) of what the
// durability promises require per message and nothing else, so the
// per-message figure of tools/loadgen can be set against a floor:
//
//   - sqlite-4-commits: the four durable commits a message needs (inbound
//     row before the ack, journal entry before turn/start, the turn with
//     its outbox row, the sent mark), each a minimal row in a transaction
//     of its own on a real file opened as the store opens it (WAL,
//     synchronous=FULL, fdatasync), on one connection with prepared
//     statements, no worker;
//   - worker-4-commits: the same four transactions submitted one after the
//     other through the store's group-commit worker;
//   - write-fdatasync-4: four appends of one WAL frame (24-byte header and
//     a 4 KiB page, what a one-page commit appends) each followed by
//     fdatasync, the bare kernel cost under the four commits;
//   - http-loopback: one net/http request and response with small JSON
//     bodies on a kept-alive 127.0.0.1 connection (a Bot API call); both
//     ends run in this process, so the figure is client plus server;
//   - pipe-echo-inprocess: a 500-byte JSON line through a pipe to a
//     goroutine that writes it back through another (both ends counted);
//   - pipe-echo-cat: the same line to a `cat` child and back, counting only
//     this process's side (what gatewayd pays per codex line it writes and
//     reads).
//
// Every figure is µs of CPU per op; for the commits one op is one message.
// SQLite only: it is the file and the fsync being measured.
func BenchmarkFloor(b *testing.B) {
	sqliteOnly(b, "measures SQLite commits and fdatasync on a file")
	b.Run("sqlite-4-commits", benchFloorSQLite)
	b.Run("worker-4-commits", benchFloorWorker)
	b.Run("write-fdatasync-4", benchFloorFdatasync)
	b.Run("http-loopback", benchFloorHTTP)
	b.Run("pipe-echo-inprocess", benchFloorPipeInProcess)
	b.Run("pipe-echo-cat", benchFloorPipeCat)
}

// floorSchema is the least the four commits could write: an inbound row,
// a journal row, the turn's two transcript messages and its outbox row,
// then the outbox row's sent mark.
var floorSchema = []string{
	`CREATE TABLE IF NOT EXISTS floor_inbound (id INTEGER PRIMARY KEY, platform TEXT NOT NULL, message_id TEXT NOT NULL, lane TEXT NOT NULL, text TEXT NOT NULL, UNIQUE (platform, message_id))`,
	`CREATE TABLE IF NOT EXISTS floor_journal (lane TEXT PRIMARY KEY, inbound_id INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS floor_messages (id INTEGER PRIMARY KEY, lane TEXT NOT NULL, role TEXT NOT NULL, text TEXT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS floor_outbox (id INTEGER PRIMARY KEY, lane TEXT NOT NULL, text TEXT NOT NULL, sent_at INTEGER)`,
}

// floorMessage is one message's four transactions; each func is the body
// of one commit.
func floorMessage(i int) []writeFunc {
	lane := "v1:telegram:dm:" + string(rune('a'+i%26))
	var outboxID int64
	return []writeFunc{
		func(ctx context.Context, q querier) error {
			_, err := q.ExecContext(ctx, `INSERT INTO floor_inbound (platform, message_id, lane, text) VALUES ('telegram', ?, ?, 'hello')`, i, lane)
			return err
		},
		func(ctx context.Context, q querier) error {
			_, err := q.ExecContext(ctx, `INSERT INTO floor_journal (lane, inbound_id) VALUES (?, ?) ON CONFLICT (lane) DO UPDATE SET inbound_id = excluded.inbound_id`, lane, i)
			return err
		},
		func(ctx context.Context, q querier) error {
			if _, err := q.ExecContext(ctx, `INSERT INTO floor_messages (lane, role, text) VALUES (?, 'user', 'hello'), (?, 'assistant', 'OK')`, lane, lane); err != nil {
				return err
			}
			return q.QueryRowContext(ctx, `INSERT INTO floor_outbox (lane, text) VALUES (?, 'OK') RETURNING id`, lane).Scan(&outboxID)
		},
		func(ctx context.Context, q querier) error {
			_, err := q.ExecContext(ctx, `UPDATE floor_outbox SET sent_at = 1 WHERE id = ?`, outboxID)
			return err
		},
	}
}

func benchFloorSQLite(b *testing.B) {
	useFdatasync(zap.NewNop())
	db, err := sql.Open("sqlite", fileURI(filepath.Join(b.TempDir(), "floor.db"), "rwc"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for _, stmt := range append([]string{"PRAGMA journal_mode = WAL"}, append(writePragmas, floorSchema...)...) {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			b.Fatalf("%s: %v", stmt, err)
		}
	}
	// Prepared once, as the worker's statements are: parsing is not part
	// of the floor.
	q := newStmtCache(conn, sqliteDialect)
	defer q.Close()
	commit := func(fn writeFunc) error {
		if _, err := q.ExecContext(ctx, sqliteDialect.begin); err != nil {
			return err
		}
		if err := fn(ctx, q); err != nil {
			_, _ = q.ExecContext(ctx, "ROLLBACK")
			return err
		}
		_, err := q.ExecContext(ctx, "COMMIT")
		return err
	}
	runFloor(b, func(i int) error {
		for _, fn := range floorMessage(i) {
			if err := commit(fn); err != nil {
				return err
			}
		}
		return nil
	})
}

func benchFloorWorker(b *testing.B) {
	s := openAt(b, testDBPath(b), Options{})
	ctx := context.Background()
	if err := s.write(ctx, func(ctx context.Context, q querier) error {
		for _, stmt := range floorSchema {
			if _, err := q.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	runFloor(b, func(i int) error {
		for _, fn := range floorMessage(i) {
			if err := s.write(ctx, fn); err != nil {
				return err
			}
		}
		return nil
	})
}

func benchFloorFdatasync(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "floor-wal"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	frame := make([]byte, 24+4096)
	var off int64
	runFloor(b, func(int) error {
		for range 4 {
			if _, err := f.WriteAt(frame, off); err != nil {
				return err
			}
			// Like a WAL between checkpoints, the file grows and is
			// rewritten from the start now and then.
			if off += int64(len(frame)); off > 1000*int64(len(frame)) {
				off = 0
			}
			if err := syscall.Fdatasync(int(f.Fd())); err != nil {
				return err
			}
		}
		return nil
	})
}

func benchFloorHTTP(b *testing.B) {
	reply := []byte(`{"ok":true,"result":{"message_id":12345}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	}))
	defer srv.Close()
	client := srv.Client()
	body := `{"chat_id":1234567,"text":"OK","reply_parameters":{"message_id":42}}`
	runFloor(b, func(int) error {
		resp, err := client.Post(srv.URL+"/botTOKEN/sendMessage", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		return errors.Join(err, resp.Body.Close())
	})
}

// floorLine is a 500-byte JSON-RPC line, newline included, the size of a
// mid-sized codex notification.
var floorLine = func() []byte {
	head := `{"jsonrpc":"2.0","method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","delta":"`
	tail := `"}}` + "\n"
	return []byte(head + strings.Repeat("x", 500-len(head)-len(tail)) + tail)
}()

func benchFloorPipeInProcess(b *testing.B) {
	toEcho, fromUs, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	fromEcho, toUs, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer toUs.Close()
		r := bufio.NewReader(toEcho)
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			if _, err := toUs.Write(line); err != nil {
				return
			}
		}
	}()
	defer toEcho.Close()
	defer fromUs.Close()
	benchPipeRoundTrips(b, fromUs, bufio.NewReader(fromEcho))
}

func benchFloorPipeCat(b *testing.B) {
	cmd := exec.Command("cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Skipf("no cat to echo through: %v", err)
	}
	defer func() { _ = in.Close(); _ = cmd.Wait() }()
	benchPipeRoundTrips(b, in, bufio.NewReader(out))
}

func benchPipeRoundTrips(b *testing.B, w io.Writer, r *bufio.Reader) {
	runFloor(b, func(int) error {
		if _, err := w.Write(floorLine); err != nil {
			return err
		}
		line, err := r.ReadSlice('\n')
		if err == nil && !bytes.Equal(line, floorLine) {
			b.Fatalf("echo returned %d bytes, want the %d sent", len(line), len(floorLine))
		}
		return err
	})
}

// runFloor runs op b.N times and reports this process's CPU per op.
func runFloor(b *testing.B, op func(i int) error) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := op(i); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(elapsed.Microseconds())/float64(b.N), "wall-µs/op")
}
