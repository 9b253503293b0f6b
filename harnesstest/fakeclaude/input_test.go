package fakeclaude

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// decodeAll feeds the chunks and flushes at the end like the Esc timer.
func decodeAll(chunks ...string) []key {
	var d decoder
	var keys []key
	for _, c := range chunks {
		keys = append(keys, d.feed([]byte(c))...)
	}
	return append(keys, d.flush()...)
}

func describe(keys []key) string {
	names := map[keyKind]string{keyText: "text", keyPaste: "paste", keyEnter: "enter", keyEsc: "esc",
		keyCtrlC: "ctrl-c", keyCtrlD: "ctrl-d", keyCtrlU: "ctrl-u", keyBackspace: "bs"}
	var parts []string
	for _, k := range keys {
		if k.kind == keyText || k.kind == keyPaste {
			parts = append(parts, fmt.Sprintf("%s(%q)", names[k.kind], k.text))
		} else {
			parts = append(parts, names[k.kind])
		}
	}
	return strings.Join(parts, " ")
}

func TestDecoder(t *testing.T) {
	cases := []struct {
		chunks []string
		want   string
	}{
		{[]string{"hi\r"}, `text("hi") enter`},
		{[]string{"\x15\x1b[200~a\nb\x1b[201~", "\r"}, `ctrl-u paste("a\nb") enter`},
		{[]string{"\x1b"}, `esc`},
		{[]string{"\x1b", "[A"}, ``}, // an arrow split after ESC is not Esc
		{[]string{"\x1b\x1b"}, `esc esc`},
		{[]string{"\x1bx"}, `esc text("x")`},
		{[]string{"\x1b[200~", "x\r\ny\rz", "\x1b[201~"}, `paste("x\ny\nz")`},
		{[]string{"\x1b[200~\x1b[A\x03\x1b[201~"}, "paste(\"\\x1b[A\\x03\")"}, // raw bytes inside a paste are content
		{[]string{"a\x7fb\x03\x04"}, `text("a") bs text("b") ctrl-c ctrl-d`},
		{[]string{"é", "€\r"}, `text("é") text("€") enter`},
		{[]string{"\x1bOP1"}, `text("1")`},
	}
	for _, c := range cases {
		if got := describe(decodeAll(c.chunks...)); got != c.want {
			t.Errorf("%q: got %s, want %s", c.chunks, got, c.want)
		}
	}
}

// TestDecoderSplitPaste splits a paste with markers at every position:
// the content always arrives whole, as one paste.
func TestDecoderSplitPaste(t *testing.T) {
	content := "line1\n\"q\" \\ \x1b[201 not an end ~\nend"
	stream := "\x15" + string(pasteStart) + content + string(pasteEnd) + "\r"
	for i := 0; i <= len(stream); i++ {
		for j := i; j <= len(stream); j += 3 {
			keys := decodeAll(stream[:i], stream[i:j], stream[j:])
			want := fmt.Sprintf("ctrl-u paste(%q) enter", content)
			if got := describe(keys); got != want {
				t.Fatalf("split at %d,%d: got %s, want %s", i, j, got, want)
			}
		}
	}
}

func TestDecoderBigPaste(t *testing.T) {
	big := strings.Repeat("0123456789abcdef\n", 100<<10/17)
	stream := []byte(string(pasteStart) + big + string(pasteEnd))
	var d decoder
	var keys []key
	for len(stream) > 0 {
		n := min(len(stream), 4093)
		keys = append(keys, d.feed(stream[:n])...)
		stream = stream[n:]
	}
	if len(keys) != 1 || keys[0].kind != keyPaste || !bytes.Equal(keys[0].text, []byte(big)) {
		t.Fatalf("got %d keys, first %d bytes", len(keys), len(keys[0].text))
	}
	if d.pending() {
		t.Fatal("decoder still pending after the paste")
	}
}

func TestPendingEsc(t *testing.T) {
	var d decoder
	if keys := d.feed([]byte("ab\x1b")); len(keys) != 1 || !d.pending() {
		t.Fatalf("keys %s, pending %v", describe(keys), d.pending())
	}
	if keys := d.flush(); describe(keys) != "esc" {
		t.Fatalf("flush: %s", describe(keys))
	}
	d.feed([]byte("\x1b[200~abc"))
	if d.pending() {
		t.Fatal("an open paste is not a pending escape")
	}
}

func TestParseScript(t *testing.T) {
	s := parseScript("x [[tool echo [ a ] > f]] [[slow 250]] [[flood 3]] [[long 4]] [[echo]] [[noreply]] [[fail]] [[slow 9]] [[nope]] [[reply BIG REPLY]] [[notranscript]] [[lateend 120]] [[latetranscript 340]]")
	if !s.notranscript || s.lateEnd.Milliseconds() != 120 || s.lateAll.Milliseconds() != 340 {
		t.Fatalf("%+v", s)
	}
	if !s.hasTool || s.tool != "echo [ a ] > f" || s.slow.Milliseconds() != 250 || s.flood != 3 || s.long != 4 || !s.echo || !s.noreply || !s.fail || s.crash || s.hang || !s.hasReply || s.reply != "BIG REPLY" {
		t.Fatalf("%+v", s)
	}
}

func TestParseArgs(t *testing.T) {
	id := "11111111-2222-4333-8444-555555555555"
	o, err := parseArgs([]string{"--resume", id, "--settings={}", "--model", "sonnet", "--effort=high", "--permission-mode", "default", "--foo-bar=1", "--verbose", "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if o.sessionID != id || !o.resume || o.settings != "{}" || o.model != "sonnet" || o.effort != "high" || o.permMode != "default" || o.prompt != "hello" {
		t.Fatalf("%+v", o)
	}
	if o, _ := parseArgs(nil); o.permMode != "auto" {
		t.Fatalf("default permission mode %q", o.permMode)
	}
	for _, bad := range [][]string{
		{"--session-id", "nope"}, {"--permission-mode=yolo"}, {"--effort", "huge"}, {"--model"}, {"-p", "x"},
	} {
		if _, err := parseArgs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestTranscriptPath(t *testing.T) {
	got := transcriptPath("/h", "/home/user/my_project.v2", "id")
	if want := "/h/.claude/projects/-home-user-my-project-v2/id.jsonl"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}
