package pty

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Pump hands every byte over, in order, and ends with io.EOF.
func TestPumpReadsToTheEnd(t *testing.T) {
	const size = 1 << 20
	p := startBare(t, "bulk", fmt.Sprint(size))
	var out bytes.Buffer
	if err := p.Pump(make([]byte, 16<<10), func(c []byte) { out.Write(c) }); err != io.EOF {
		t.Fatalf("Pump = %v, want io.EOF", err)
	}
	checkBulk(t, out.Bytes(), size)
}

// Once the child has written its output (and then done something the
// test can see), Drain makes the slow Pump's consume take every byte of
// it before Drain returns.
func TestDrainConsumesWhatTheChildWrote(t *testing.T) {
	const size = 200 << 10 // well over what the terminal buffers
	mark := filepath.Join(t.TempDir(), "written")
	p := startBare(t, "bulk-then-mark", fmt.Sprint(size), mark)
	var mu sync.Mutex
	var out bytes.Buffer
	pumped := make(chan error, 1)
	go func() {
		pumped <- p.Pump(make([]byte, 4<<10), func(c []byte) {
			time.Sleep(2 * time.Millisecond) // a consumer slower than the child
			mu.Lock()
			out.Write(c)
			mu.Unlock()
		})
	}()
	for deadline := time.Now().Add(guard); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never finished writing")
		}
	}
	mu.Lock()
	before := out.Len()
	mu.Unlock()
	p.Drain()
	mu.Lock()
	got := bytes.Clone(out.Bytes())
	mu.Unlock()
	if before == size {
		t.Logf("the pump had caught up before Drain (nothing to prove this run)")
	}
	checkBulk(t, got, size)
	p.Kill()
	if err := <-pumped; err != io.EOF {
		t.Fatalf("Pump = %v, want io.EOF", err)
	}
	p.Drain() // after the end: nothing to do, must not block
}

// startBare starts a helper (24×80) with no reader attached; startHelper
// adds one.
func startBare(t *testing.T, name string, args ...string) *Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(Options{Argv: append([]string{exe}, args...), Env: helperEnviron(name), Rows: 24, Cols: 80})
	if err != nil {
		t.Fatalf("Start(%s): %v", name, err)
	}
	t.Cleanup(func() {
		p.Kill()
		p.Close()
	})
	return p
}

func checkBulk(t *testing.T, out []byte, size int) {
	t.Helper()
	if len(out) != size {
		t.Fatalf("consumed %d bytes, want %d", len(out), size)
	}
	for i, b := range out {
		if b != bulkByte(i) {
			t.Fatalf("byte %d is %q, want %q", i, b, bulkByte(i))
		}
	}
}
