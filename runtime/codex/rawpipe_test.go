package codex

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// The app-server's stdout reader hands over exactly the bytes written, in
// order, across reads that must wait for the writer, and ends with io.EOF
// when the writer closes; a reader whose file is closed under it returns
// an error instead of blocking.
func TestPipeReaderReadsWhatWasWritten(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var want bytes.Buffer
	for i := range 2000 {
		want.WriteString(strings.Repeat("x", i%300) + "\n")
	}
	go func() {
		// Uneven writes, some larger than the pipe buffer, so reads find
		// the pipe empty (EAGAIN) and wait on the poller.
		b := want.Bytes()
		for len(b) > 0 {
			n := min(len(b), 1+len(b)%70_001)
			if _, err := w.Write(b[:n]); err != nil {
				t.Error(err)
				break
			}
			b = b[n:]
		}
		w.Close()
	}()
	br := bufio.NewReaderSize(pipeReader(r), 64<<10)
	var got bytes.Buffer
	for {
		line, err := br.ReadBytes('\n')
		got.Write(line)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("read %d bytes, want the %d written", got.Len(), want.Len())
	}

	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	done := make(chan error, 1)
	pr := pipeReader(r2)
	go func() {
		_, err := pr.Read(make([]byte, 10))
		done <- err
	}()
	r2.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read of a closed pipe: err = %v, want os.ErrClosed", err)
	}
}
