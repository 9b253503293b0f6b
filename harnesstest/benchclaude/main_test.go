package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// syncBuffer hands each write to the test through a channel.
type syncBuffer struct {
	ch chan []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.ch <- append([]byte(nil), p...)
	return len(p), nil
}

func TestPrintOnSignalCopiesTheStreamThenTheMarker(t *testing.T) {
	stream := filepath.Join(t.TempDir(), "stream")
	data := bytes.Repeat([]byte("line of the stream\r\n"), 20000) // > one 128 KiB copy
	if err := os.WriteFile(stream, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sig := make(chan os.Signal, 1)
	out := &syncBuffer{ch: make(chan []byte, 1024)}
	go printOnSignal(sig, stream, out)
	for n := 1; n <= 2; n++ {
		sig <- syscall.SIGUSR1
		var got []byte
		want := append(append([]byte(nil), data...), ingestTail(n)...)
		deadline := time.After(10 * time.Second)
		for len(got) < len(want) {
			select {
			case p := <-out.ch:
				got = append(got, p...)
			case <-deadline:
				t.Fatalf("signal %d: %d bytes of %d", n, len(got), len(want))
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("signal %d: output differs from the stream and its marker", n)
		}
		if !strings.Contains(string(got[len(data):]), "BENCH-INGEST-DONE "+string(rune('0'+n))) {
			t.Fatalf("signal %d: no marker", n)
		}
	}
}

func TestStampHooksReplacesTheForwarderOfTimedHooks(t *testing.T) {
	settings := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"exec /b/dlgt-hook --socket /s Stop"}]}],` +
		`"SessionStart":[{"hooks":[{"type":"command","command":"/b/dlgt-hook --socket /s SessionStart"}]}],` +
		`"UserPromptSubmit":[{"hooks":[{"type":"command","command":"exec /b/dlgt-hook --socket /s UserPromptSubmit"}]}]}}`
	out := stampHooks([]string{"--settings", settings}, "/x/stamp")
	for _, want := range []string{`"exec /x/stamp --socket /s Stop"`, `"/x/stamp --socket /s SessionStart"`, `"exec /b/dlgt-hook --socket /s UserPromptSubmit"`} {
		if !strings.Contains(out[1], want) {
			t.Errorf("stampHooks = %s, lacks %s", out[1], want)
		}
	}
	if got := replaceForwarder("exec /usr/bin/dlgt hook --socket /s Stop", "/x/stamp"); got != "exec /usr/bin/dlgt hook --socket /s Stop" {
		t.Errorf("a dlgt hook command became %q", got)
	}
}
