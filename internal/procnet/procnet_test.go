package procnet

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

// Lines captured from a kernel (x86-64) while a client running as uid 65534
// was connected to a server running as root: over 127.0.0.1, over ::1, and
// from an IPv6 socket to ::ffff:127.0.0.1 on a dual-stack listener.
const (
	tcpHeader  = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
	tcp6Header = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"

	v4Listen = "   2: 0100007F:88DB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 186589 1 00000000742cb26f 100 0 0 10 0"
	v4Client = "   4: 0100007F:C158 0100007F:88DB 01 00000000:00000000 00:00000000 00000000 65534        0 186676 2 000000002612f4ec 20 0 0 10 -1"
	v4Server = "   5: 0100007F:88DB 0100007F:C158 01 00000000:00000000 00:00000000 00000000     0        0 186592 1 0000000061a66b47 20 0 0 10 -1"

	v6Listen = "   0: 00000000000000000000000001000000:9D7D 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 187081 1 0000000074514109 100 0 0 10 0"
	v6Client = "   1: 00000000000000000000000001000000:ECC4 00000000000000000000000001000000:9D7D 01 00000000:00000000 00:00000000 00000000 65534        0 187091 2 00000000fecc2d17 20 0 0 10 -1"
	v6Server = "   2: 00000000000000000000000001000000:9D7D 00000000000000000000000001000000:ECC4 01 00000000:00000000 00:00000000 00000000     0        0 187084 1 0000000060273480 20 0 0 10 -1"

	mappedClient = "   1: 0000000000000000FFFF00000100007F:A870 0000000000000000FFFF00000100007F:9955 01 00000000:00000000 00:00000000 00000000 65534        0 187325 2 0000000074514109 20 0 0 10 -1"
	mappedServer = "   2: 0000000000000000FFFF00000100007F:9955 0000000000000000FFFF00000100007F:A870 01 00000000:00000000 00:00000000 00000000     0        0 187309 1 00000000fecc2d17 20 0 0 10 -1"

	// A closed client's socket waiting out TIME_WAIT: the kernel prints uid 0.
	v4TimeWait = "   7: 0100007F:C159 0100007F:88DB 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000"
)

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func TestParseLine(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       Socket
	}{
		{"ipv4 client", v4Client, Socket{ap("127.0.0.1:49496"), ap("127.0.0.1:35035"), 0x01, 65534}},
		{"ipv4 listener", v4Listen, Socket{ap("127.0.0.1:35035"), ap("0.0.0.0:0"), 0x0A, 0}},
		{"ipv6 client", v6Client, Socket{ap("[::1]:60612"), ap("[::1]:40317"), 0x01, 65534}},
		{"ipv4-mapped client", mappedClient, Socket{ap("[::ffff:127.0.0.1]:43120"), ap("[::ffff:127.0.0.1]:39253"), 0x01, 65534}},
		{"time-wait", v4TimeWait, Socket{ap("127.0.0.1:49497"), ap("127.0.0.1:35035"), 0x06, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseLine([]byte(c.line))
			if !ok || got != c.want {
				t.Errorf("ParseLine = %+v, %v; want %+v", got, ok, c.want)
			}
		})
	}
	for _, bad := range []string{tcpHeader, tcp6Header, "", "   4: 0100007G:C158 0100007F:88DB 01 0:0 00:0 0 65534",
		"   4: 0100007F:C158 0100007F:88DB 01 0:0 00:0 0 4294967296", "   4: 0100007F 0100007F:88DB 01 0:0 00:0 0 1"} {
		if s, ok := ParseLine([]byte(bad)); ok {
			t.Errorf("ParseLine(%q) = %+v, want not a socket", bad, s)
		}
	}
}

// captured writes tables holding the captured lines.
func captured(t *testing.T, tcp, tcp6 []string) Tables {
	t.Helper()
	dir := t.TempDir()
	write := func(name, header string, lines []string) {
		text := header + "\n"
		for _, l := range lines {
			text += l + "\n"
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("tcp", tcpHeader, tcp)
	write("tcp6", tcp6Header, tcp6)
	return Tables{Dir: dir}
}

// The server's end of each captured connection finds the client's uid,
// never its own socket's (uid 0) nor a TIME_WAIT line's.
func TestPeerUIDInCapturedTables(t *testing.T) {
	tables := captured(t, []string{v4Listen, v4TimeWait, v4Server, v4Client},
		[]string{v6Listen, v6Server, v6Client, mappedServer, mappedClient})
	for _, c := range []struct {
		name          string
		local, remote netip.AddrPort
	}{
		{"ipv4", ap("127.0.0.1:35035"), ap("127.0.0.1:49496")},
		{"ipv6", ap("[::1]:40317"), ap("[::1]:60612")},
		{"ipv4-mapped, as Go reports it", ap("127.0.0.1:39253"), ap("127.0.0.1:43120")},
		{"ipv4-mapped, as written", ap("[::ffff:127.0.0.1]:39253"), ap("[::ffff:127.0.0.1]:43120")},
	} {
		t.Run(c.name, func(t *testing.T) {
			uid, err := tables.PeerUID(c.local, c.remote)
			if err != nil || uid != 65534 {
				t.Errorf("PeerUID = %d, %v; want 65534", uid, err)
			}
		})
	}
	if uid, err := tables.PeerUID(ap("127.0.0.1:35035"), ap("127.0.0.1:49497")); !errors.Is(err, ErrNotFound) {
		t.Errorf("a TIME_WAIT peer: %d, %v; want ErrNotFound", uid, err)
	}
	if uid, err := tables.PeerUID(ap("127.0.0.1:35035"), ap("127.0.0.1:1")); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown peer: %d, %v; want ErrNotFound", uid, err)
	}
	if uid, err := tables.ListenerUID(ap("127.0.0.1:35035")); err != nil || uid != 0 {
		t.Errorf("ListenerUID = %d, %v; want 0", uid, err)
	}
	if _, err := (Tables{Dir: t.TempDir()}).PeerUID(ap("127.0.0.1:35035"), ap("127.0.0.1:49496")); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("no tables: %v, want a read error", err)
	}
}

// dialPair connects to a listener on network/address and returns both ends'
// addresses as the server sees them.
func dialPair(tb testing.TB, network, address string) (local, remote netip.AddrPort) {
	tb.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		tb.Skipf("no %s loopback here: %v", network, err)
	}
	tb.Cleanup(func() { ln.Close() })
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	s, err := ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s.LocalAddr().(*net.TCPAddr).AddrPort(), s.RemoteAddr().(*net.TCPAddr).AddrPort()
}

// The running kernel's tables name this process's uid for its own loopback
// connections, over IPv4 and IPv6.
func TestPeerUIDOfALiveConnection(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp here")
	}
	for _, c := range []struct{ network, address string }{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}} {
		t.Run(c.network, func(t *testing.T) {
			local, remote := dialPair(t, c.network, c.address)
			uid, err := Proc.PeerUID(local, remote)
			if err != nil || uid != uint32(os.Getuid()) {
				t.Errorf("PeerUID = %d, %v; want %d", uid, err, os.Getuid())
			}
			if uid, err := Proc.ListenerUID(local); err != nil || uid != uint32(os.Getuid()) {
				t.Errorf("ListenerUID = %d, %v; want %d", uid, err, os.Getuid())
			}
		})
	}
}

// BenchmarkPeerUID is the cost the API pays once per connection: one lookup
// in the live tables, with the benchmark's own sockets in them.
func BenchmarkPeerUID(b *testing.B) {
	for _, c := range []struct{ network, address string }{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}} {
		b.Run(c.network, func(b *testing.B) {
			local, remote := dialPair(b, c.network, c.address)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Proc.PeerUID(local, remote); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
