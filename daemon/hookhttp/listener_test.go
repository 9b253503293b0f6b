package hookhttp

import (
	"net"
	"testing"
	"time"
)

// acceptAll accepts l's connections into the channel it returns, which
// is closed when Accept fails (l closed).
func acceptAll(l net.Listener) <-chan net.Conn {
	accepted := make(chan net.Conn, 4)
	go func() {
		defer close(accepted)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return accepted
}

// The capped listener holds at most n connections: the next Accept waits
// until one of them is closed (closing twice frees one slot only).
func TestCappedListenerWaitsForAFreeSlot(t *testing.T) {
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newCappedListener(inner, 2)
	defer l.Close()
	accepted := acceptAll(l)
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp4", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted over the cap of 2")
	case <-time.After(100 * time.Millisecond):
	}
	first.Close()
	first.Close()
	var third net.Conn
	select {
	case third = <-accepted:
		defer third.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted after one closed")
	}
	c, err := net.Dial("tcp4", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-accepted:
		t.Fatal("a connection closed twice freed two slots")
	case <-time.After(100 * time.Millisecond):
	}
	second.Close()
}
