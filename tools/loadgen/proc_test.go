package loadgen

import (
	"os"
	"testing"
	"time"
)

// The command name may hold spaces and ')' ; the fields after it still parse.
func TestParseStatOddCommandName(t *testing.T) {
	raw := []byte("4242 (a) b (c)) S 7 4242 4242 0 -1 4194560 100 0 0 0 250 50 3 7 20 0 9 0 100 1000000 512 18446744073709551615")
	st, err := parseStat(4242, raw)
	if err != nil {
		t.Fatal(err)
	}
	if st.PPID != 7 {
		t.Errorf("ppid %d, want 7", st.PPID)
	}
	if want := 310 * clockTick; st.CPU != want {
		t.Errorf("cpu %v, want %v", st.CPU, want)
	}
	if want := 50 * clockTick; st.Sys != want {
		t.Errorf("sys %v, want %v", st.Sys, want)
	}
	if want := int64(512 * os.Getpagesize()); st.RSS != want {
		t.Errorf("rss %d, want %d", st.RSS, want)
	}
}

func TestParseStatTruncated(t *testing.T) {
	if _, err := parseStat(1, []byte("1 (x) S 0 1")); err == nil {
		t.Error("truncated stat parsed without error")
	}
	if _, err := parseStat(1, []byte("garbage")); err == nil {
		t.Error("stat without a command name parsed without error")
	}
}

// This test process burns CPU until ReadStat sees it grow. The burn is
// bounded by CPU seen, not by wall time: on a loaded machine 50 ms of wall
// time can be less than one clock tick of CPU.
func TestReadStatSelf(t *testing.T) {
	st, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	later := st
	for deadline := time.Now().Add(10 * time.Second); later.CPU <= st.CPU && time.Now().Before(deadline); {
		for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		}
		if later, err = ReadStat(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if later.CPU <= st.CPU || later.RSS <= 0 {
		t.Errorf("cpu %v then %v, rss %d: want cpu to grow and rss > 0", st.CPU, later.CPU, later.RSS)
	}
}
