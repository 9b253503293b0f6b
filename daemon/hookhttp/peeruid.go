package hookhttp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

// The HTTP hook port's stand-in for the Unix sockets' peer credentials: a
// loopback TCP peer is checked by the uid that owns its socket, which
// Linux lists in /proc/net/tcp (this network namespace's TCP sockets, a
// line each, the connecting side's with its own address as local_address
// and the daemon's as rem_address).

// procNetTCP is read for the owners of loopback sockets.
const procNetTCP = "/proc/net/tcp"

// maxProcNetTCP bounds the read: about 150 bytes per socket.
const maxProcNetTCP = 64 << 20

// errNoPeer is a connection /proc/net/tcp does not list (gone already).
var errNoPeer = errors.New("the peer's socket is not in /proc/net/tcp")

// tcpPeerUID returns the uid owning the socket at remote, connected to
// local, both IPv4 addresses of this machine.
func tcpPeerUID(local, remote *net.TCPAddr) (int, error) {
	f, err := os.Open(procNetTCP)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	return findPeerUID(io.LimitReader(f, maxProcNetTCP), procAddr(remote), procAddr(local))
}

// procAddr spells an IPv4 address as /proc/net/tcp does: the four bytes
// as one little-endian hex word, then the port in hex.
func procAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		return ""
	}
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
}

// findPeerUID scans a /proc/net/tcp listing for the socket whose local
// address is self and remote address is other, and returns its uid.
func findPeerUID(r io.Reader, self, other string) (int, error) {
	if self == "" || other == "" {
		return -1, errors.New("not an IPv4 address")
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// sl local rem st queues timer retrnsmt uid ...
		if len(f) < 8 || f[1] != self || f[2] != other {
			continue
		}
		uid, err := strconv.Atoi(f[7])
		if err != nil {
			return -1, fmt.Errorf("/proc/net/tcp: uid %q: %v", f[7], err)
		}
		return uid, nil
	}
	if err := sc.Err(); err != nil {
		return -1, err
	}
	return -1, errNoPeer
}

// sameUserListener accepts only connections whose peer socket belongs to
// this process's uid; others are closed at once and reported to refused.
type sameUserListener struct {
	net.Listener
	uid     int
	refused func(remote net.Addr, why string)
}

func (l *sameUserListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		local, lok := c.LocalAddr().(*net.TCPAddr)
		remote, rok := c.RemoteAddr().(*net.TCPAddr)
		if !lok || !rok {
			c.Close()
			l.refused(c.RemoteAddr(), "not a TCP peer")
			continue
		}
		uid, err := tcpPeerUID(local, remote)
		switch {
		case err != nil:
			c.Close()
			l.refused(c.RemoteAddr(), "its owner cannot be read: "+err.Error())
		case uid != l.uid:
			c.Close()
			l.refused(c.RemoteAddr(), fmt.Sprintf("another user's socket (uid %d)", uid))
		default:
			return c, nil
		}
	}
}
