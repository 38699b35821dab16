package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// startSpool runs the platform with a spool of maxSpool bytes in its own
// directory, answering with answer.
func startSpool(t *testing.T, maxSpool int64, answer func(*Platform, gateway.Inbound)) (*Platform, *fileSink, string) {
	t.Helper()
	dir := t.TempDir()
	var sink *fileSink
	p := runAPI(t, Config{MaxFileBytes: 1 << 10, MaxSpoolBytes: maxSpool, SpoolDir: dir},
		func(p *Platform, st *store.Store) testGateway {
			sink = &fileSink{fakeSink: newFakeSink(p, st, answer), got: map[string][]byte{}, mimes: map[string]string{}}
			return sink
		})
	return p, sink, dir
}

// signalReader is a body that tells, on its first Read, that the server
// asked for it.
type signalReader struct {
	r     io.Reader
	once  sync.Once
	asked chan struct{}
}

func (s *signalReader) Read(p []byte) (int, error) {
	s.once.Do(func() { close(s.asked) })
	return s.r.Read(p)
}

// A request the spool has no room for, with other uploads in progress, is
// answered 503 with Retry-After and a JSON error; the upload in progress
// is stored whole, and once it is, the spool takes the refused one.
func TestSpoolFullAnswers503WithRetryAfter(t *testing.T) {
	t.Parallel()
	p, sink, _ := startSpool(t, 1000, echo)
	first := strings.Repeat("a", 400)
	ctA, bodyA := multipartBody(t, part{"text", "", "", "first"}, part{"file", "a.bin", "", first})
	// It stops half-way until held is closed: the server has reserved its
	// length and spooled part of it.
	whole := bodyA.Bytes()
	body := &signalReader{r: bytes.NewReader(whole[:len(whole)/2]), asked: make(chan struct{})}
	held := make(chan struct{})
	// It declares its length and waits for 100 Continue: by the time the
	// server reads the body it has reserved the length.
	reqA, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/up/messages", io.MultiReader(body,
		readerFunc(func([]byte) (int, error) { <-held; return 0, io.EOF }), bytes.NewReader(whole[len(whole)/2:])))
	reqA.ContentLength = int64(len(whole))
	reqA.Header.Set("Content-Type", ctA)
	reqA.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	doneA := make(chan int, 1)
	go func() {
		resp, err := client.Do(reqA)
		if err != nil {
			t.Error(err)
			doneA <- 0
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Logf("first upload: %d %s", resp.StatusCode, b)
		}
		doneA <- resp.StatusCode
	}()
	select {
	case <-body.asked:
	case code := <-doneA:
		t.Fatalf("the first upload ended (%d) before its body was asked for", code)
	}

	ctB, bodyB := multipartBody(t, part{"text", "", "", "second"}, part{"file", "b.bin", "", strings.Repeat("b", 300)})
	bodyBytes := bodyB.Bytes()
	req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/up/messages", bytes.NewReader(bodyBytes))
	req.Header.Set("Content-Type", ctB)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct{ Error string }
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		json.Unmarshal(got, &e) != nil || !strings.Contains(e.Error, "upload spool is full") {
		t.Fatalf("with the spool taken: %d (Retry-After %q) %s, want 503 with Retry-After and a JSON error",
			resp.StatusCode, resp.Header.Get("Retry-After"), got)
	}

	close(held)
	if code := <-doneA; code != http.StatusOK {
		t.Fatalf("the upload in progress: %d, want 200", code)
	}
	sink.mu.Lock()
	gotA := string(sink.got["a.bin"])
	sink.mu.Unlock()
	if gotA != first {
		t.Errorf("the upload in progress reached the gateway as %d bytes, want %d", len(gotA), len(first))
	}
	if used := p.spool.inUse(); used != 0 {
		t.Errorf("spool reservations after the upload = %d bytes, want 0", used)
	}
	if code, got := postMultipart(t, p, ctB, bytes.NewReader(bodyBytes)); code != http.StatusOK {
		t.Fatalf("the refused upload sent again: %d %s, want 200", code, got)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// A body of unknown length reserves as it is spooled: past the room other
// uploads leave, 503; larger than the whole spool, 413 (no retry helps).
// Either way nothing of it stays in the spool.
func TestSpoolFullWhileStreaming(t *testing.T) {
	t.Parallel()
	p, sink, dir := startSpool(t, 1000, echo)
	chunked := func(parts ...part) (int, http.Header, string) {
		t.Helper()
		ct, body := multipartBody(t, parts...)
		// A reader that is not a *bytes.Reader: net/http sends it chunked.
		req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/up/messages", io.MultiReader(body))
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(got)
	}
	if !p.spool.reserve(900) { // another upload in progress
		t.Fatal("could not reserve")
	}
	code, h, got := chunked(part{"text", "", "", "hi"}, part{"file", "a.bin", "", strings.Repeat("a", 200)})
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || !strings.Contains(got, "upload spool is full") {
		t.Errorf("streamed past the room left: %d (Retry-After %q) %s, want 503", code, h.Get("Retry-After"), got)
	}
	p.spool.release(900)
	code, _, got = chunked(part{"text", "", "", "hi"}, part{"file", "a.bin", "", strings.Repeat("a", 1000)},
		part{"file", "b.bin", "", strings.Repeat("b", 1000)})
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(got, "larger than the 1000 bytes the upload spool holds") {
		t.Errorf("streamed past the whole spool: %d %s, want 413", code, got)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("spool holds %q after the refusals", got)
	}
	if used := p.spool.inUse(); used != 0 {
		t.Errorf("spool reservations after the refusals = %d bytes, want 0", used)
	}
	if n := sink.received(); n != 0 {
		t.Errorf("%d refused messages reached the gateway", n)
	}
}

// The spool's copies go as soon as the gateway has taken the message, not
// when its turn is answered: a request waiting for a long turn holds no
// spool room.
func TestSpoolEmptiedOnceDelivered(t *testing.T) {
	t.Parallel()
	answer := make(chan struct{})
	p, _, dir := startSpool(t, 0, func(p *Platform, in gateway.Inbound) {
		<-answer
		echo(p, in)
	})
	ct, body := multipartBody(t, part{"text", "", "", "hi"}, part{"file", "a.bin", "", "some bytes"})
	req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/up/messages", body)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The stream has begun (headers are here): the message was delivered
	// and its turn not answered yet.
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("spool holds %q while the turn runs, want nothing", got)
	}
	if used := p.spool.inUse(); used != 0 {
		t.Errorf("spool reservations while the turn runs = %d bytes, want 0", used)
	}
	close(answer)
	if got, _ := io.ReadAll(resp.Body); !strings.Contains(string(got), "re: hi") {
		t.Errorf("stream %s, want the echo", got)
	}
}

func TestMaxSpoolBytesDefault(t *testing.T) {
	c := Config{MaxFileBytes: 1 << 20}.withDefaults()
	if want := int64(4 * MaxFiles << 20); c.MaxSpoolBytes != want {
		t.Errorf("MaxSpoolBytes = %d, want 4 × %d files × 1 MiB = %d", c.MaxSpoolBytes, MaxFiles, want)
	}
}

// entries lists dir's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name())
	}
	return names
}
