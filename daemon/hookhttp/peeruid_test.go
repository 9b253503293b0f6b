package hookhttp

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProcAddr(t *testing.T) {
	if got := procAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4711}); got != "0100007F:1267" {
		t.Fatalf("procAddr = %q", got)
	}
	if got := procAddr(&net.TCPAddr{IP: net.IPv6loopback, Port: 1}); got != "" {
		t.Fatalf("an IPv6 address became %q", got)
	}
}

// findPeerUID takes the uid of the line whose local and remote addresses
// are the peer's and the daemon's, in that order, and no other.
func TestFindPeerUID(t *testing.T) {
	const listing = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1267 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7989 1 0 100 0 0 10 0
   1: 0100007F:1267 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 8001 1 0 20 4 30 10 -1
   2: 0100007F:D431 0100007F:1267 01 00000000:00000000 00:00000000 00000000  1000        0 8002 1 0 20 4 30 10 -1
`
	uid, err := findPeerUID(strings.NewReader(listing), "0100007F:D431", "0100007F:1267")
	if err != nil || uid != 1000 {
		t.Fatalf("uid %d, err %v; want 1000", uid, err)
	}
	if _, err := findPeerUID(strings.NewReader(listing), "0100007F:D432", "0100007F:1267"); err != errNoPeer {
		t.Fatalf("a peer not listed: err %v", err)
	}
	if _, err := findPeerUID(strings.NewReader(strings.Replace(listing, "  1000 ", "  x100 ", 1)), "0100007F:D431", "0100007F:1267"); err == nil {
		t.Fatal("a malformed uid was taken")
	}
}

// The listener hands over a connection from this user and closes one
// from another (the second part needs root to connect as another user).
func TestSameUserListener(t *testing.T) {
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan string, 4)
	l := &sameUserListener{Listener: inner, uid: os.Getuid(), refused: func(_ net.Addr, why string) { refused <- why }}
	defer l.Close()
	accepted := acceptAll(l)
	c, err := net.Dial("tcp4", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case a := <-accepted:
		a.Close()
	case why := <-refused:
		t.Fatalf("this user's connection refused: %s", why)
	case <-time.After(10 * time.Second):
		t.Fatal("nothing accepted")
	}

	if os.Getuid() != 0 {
		t.Skip("connecting as another user needs root; the same-user half passed")
	}
	port := strconv.Itoa(inner.Addr().(*net.TCPAddr).Port)
	cmd := exec.Command("/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+port+"; sleep 5")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	select {
	case why := <-refused:
		if !strings.Contains(why, "uid 65534") {
			t.Fatalf("refused for %q", why)
		}
	case a := <-accepted:
		a.Close()
		t.Fatal("another user's connection was accepted")
	case <-time.After(10 * time.Second):
		t.Fatal("the other user's connection was neither accepted nor refused")
	}
}
