package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// Protocol abuse over a real socket: hostile framing, floods and ids. The
// handler is trivial (baseMux plus a few methods); what is under test is
// the transport. No test asserts a duration: ioTimeout is a hang guard.

// abuseMux is baseMux plus "nop" (the smallest answer) and "decode",
// which strictly decodes its params as session.fetch would and parses the
// cursor.
func abuseMux() mux {
	m := baseMux()
	m["nop"] = func(ctx context.Context, peer Peer, req *Request) (any, error) { return true, nil }
	m["decode"] = func(ctx context.Context, peer Peer, req *Request) (any, error) {
		var p SessionFetchParams
		if err := Decode(req.Params, &p); err != nil {
			return nil, err
		}
		if _, _, err := ParsePosition(p.Cursor); err != nil {
			return nil, err
		}
		return true, nil
	}
	return m
}

// heapSampler records the peak HeapInuse while it runs.
type heapSampler struct {
	base uint64
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func startHeapSampler() *heapSampler {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := &heapSampler{base: ms.HeapInuse, stop: make(chan struct{}), done: make(chan struct{})}
	h.peak.Store(ms.HeapInuse)
	go func() {
		defer close(h.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > h.peak.Load() {
				h.peak.Store(ms.HeapInuse)
			}
		}
	}()
	return h
}

// finish stops sampling and returns the baseline, the peak, and the
// HeapInuse after a GC.
func (h *heapSampler) finish() (base, peak, after uint64) {
	close(h.stop)
	<-h.done
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return h.base, h.peak.Load(), ms.HeapInuse
}

const heapBound = 64 << 20

func checkHeap(t *testing.T, what string, h *heapSampler) {
	t.Helper()
	base, peak, after := h.finish()
	t.Logf("%s: HeapInuse base %d KiB, peak %d KiB, after %d KiB", what, base>>10, peak>>10, after>>10)
	if peak > base && peak-base > heapBound {
		t.Fatalf("%s: HeapInuse grew by %d MiB (peak), want under %d MiB", what, (peak-base)>>20, heapBound>>20)
	}
	if after > base && after-base > heapBound {
		t.Fatalf("%s: HeapInuse stayed %d MiB above baseline", what, (after-base)>>20)
	}
}

// wantCleanLine checks that a response line is valid UTF-8 JSON with no
// raw control bytes: safe to print and to parse with any strict decoder.
func wantCleanLine(t testing.TB, line []byte) {
	t.Helper()
	if !utf8.Valid(line) {
		t.Fatalf("response %q is not valid UTF-8", line)
	}
	if !json.Valid(line) {
		t.Fatalf("response %q is not valid JSON", line)
	}
	for _, b := range line {
		if b < 0x20 || b == 0x7f {
			t.Fatalf("response %q carries raw control byte %#x", line, b)
		}
	}
}

func TestAbusePartialLinesHeldOpen(t *testing.T) {
	const maxConns = 8
	srv, path := startServer(t, abuseMux(), Limits{MaxConnections: maxConns})
	// All but two slots hold a request that never finishes its line.
	var holders []*tconn
	for i := 0; i < maxConns-2; i++ {
		c := dialT(t, path)
		c.write(fmt.Sprintf(`{"id":"held-%d","method":"echo","par`, i))
		holders = append(holders, c)
	}
	waitFor(t, "held connections to register", func() bool { return srv.ConnCount() == maxConns-2 })
	// Others are served meanwhile, over and over, on fresh connections.
	for i := 0; i < 50; i++ {
		c := dialT(t, path)
		wantResult(t, c.call(fmt.Sprintf(`{"id":"other-%d","method":"echo"}`, i)), fmt.Sprintf(`"other-%d"`, i))
		c.nc.Close()
		waitFor(t, "closed connection to free its slot", func() bool { return srv.ConnCount() == maxConns-2 })
	}
	// A partial line held open on a connection does not block that
	// connection's earlier requests either.
	c := dialT(t, path)
	c.write(`{"id":"first","method":"echo"}` + "\n" + `{"id":"second","meth`)
	wantResult(t, c.readResp(), `"first"`)
	// Finishing the held lines answers them, byte by byte if need be.
	for i, h := range holders {
		for _, b := range []byte(`ams":{"n":1}}`) {
			h.write(string(b))
		}
		h.write("\n")
		wantResult(t, h.readResp(), fmt.Sprintf(`"held-%d"`, i))
	}
	c.write(`od":"echo"}` + "\n")
	wantResult(t, c.readResp(), `"second"`)
}

func TestAbuseMillionTinyRequests(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 50_000
	}
	_, path := startServer(t, abuseMux(), Limits{RateLimit: 2 * n, PendingBytes: 8 << 20})
	c := dialT(t, path)
	heap := startHeapSampler()

	writeErr := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(c.nc, 64<<10)
		var buf []byte
		c.nc.SetWriteDeadline(time.Now().Add(10 * ioTimeout))
		for i := 0; i < n; i++ {
			buf = append(buf[:0], `{"id":`...)
			buf = strconv.AppendInt(buf, int64(i), 10)
			buf = append(buf, `,"method":"nop"}`+"\n"...)
			if _, err := bw.Write(buf); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- bw.Flush()
	}()

	seen := make([]bool, n)
	const prefix, suffix = `{"id":`, `,"result":true}`
	for got := 0; got < n; got++ {
		c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			t.Fatalf("after %d responses: %v", got, err)
		}
		line = line[:len(line)-1]
		if !bytes.HasPrefix(line, []byte(prefix)) || !bytes.HasSuffix(line, []byte(suffix)) {
			t.Fatalf("response %d is %q, want a result", got, line)
		}
		id, err := strconv.Atoi(string(line[len(prefix) : len(line)-len(suffix)]))
		if err != nil || id < 0 || id >= n || seen[id] {
			t.Fatalf("response %q: bad or repeated id", line)
		}
		seen[id] = true
	}
	if err := <-writeErr; err != nil {
		t.Fatalf("writing requests: %v", err)
	}
	checkHeap(t, fmt.Sprintf("%d pipelined requests", n), heap)
	// Nothing extra was queued, and the connection still works.
	wantResult(t, c.call(`{"id":"after","method":"echo"}`), `"after"`)
}

// TestAbuseGiantLine streams 1 GiB without a newline (64 MiB with
// -short) against the 1 MiB line limit.
func TestAbuseGiantLine(t *testing.T) {
	total := 1 << 30
	if testing.Short() {
		total = 64 << 20
	}
	_, path := startServer(t, abuseMux(), Limits{})
	c := dialT(t, path)
	wantResult(t, c.call(`{"id":"warm","method":"echo"}`), `"warm"`)
	heap := startHeapSampler()

	c.write(`{"id":"giant","method":"echo","params":{"pad":"`)
	chunk := bytes.Repeat([]byte("g"), 1<<20)
	for sent := 0; sent < total; sent += len(chunk) {
		c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
		if _, err := c.nc.Write(chunk); err != nil {
			t.Fatalf("after %d bytes: %v", sent, err)
		}
		if sent == total/2 {
			// Halfway through, another client is served.
			o := dialT(t, path)
			wantResult(t, o.call(`{"id":"meanwhile","method":"echo"}`), `"meanwhile"`)
			o.nc.Close()
		}
	}
	// Nothing is answered before the newline arrives.
	c.nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if b, err := c.br.Peek(1); err == nil {
		t.Fatalf("answered %q before the line ended", b)
	}
	c.write(`"}}` + "\n")
	line := c.readLine()
	wantCleanLine(t, line)
	var r Response
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatal(err)
	}
	wantCode(t, r, CodeInvalidArgument)
	if string(r.ID) != `""` {
		t.Fatalf("oversized line answered with id %s, want \"\"", r.ID)
	}
	checkHeap(t, fmt.Sprintf("%d MiB line", total>>20), heap)
	// Exactly one answer, and the connection is still usable.
	wantResult(t, c.call(`{"id":"after","method":"echo"}`), `"after"`)
}

func TestAbuseDeeplyNestedJSON(t *testing.T) {
	_, path := startServer(t, abuseMux(), Limits{})
	c := dialT(t, path)
	const depth = 100_000
	open, shut := strings.Repeat("[", depth), strings.Repeat("]", depth)
	objOpen, objShut := strings.Repeat(`{"a":`, depth), strings.Repeat("}", depth)
	const near = 9000 // within encoding/json's depth limit of 10000
	for _, tc := range []struct {
		name, line, id string
		code           Code
	}{
		{"bare arrays", open + shut, `""`, CodeInvalidArgument},
		{"unclosed arrays", open, `""`, CodeInvalidArgument},
		{"bare objects", strings.Repeat("{", depth), `""`, CodeInvalidArgument},
		{"nested params array", `{"id":"deep","method":"echo","params":` + open + shut + `}`, `"deep"`, CodeInvalidArgument},
		{"nested params object", `{"id":"deep-obj","method":"echo","params":` + objOpen + "1" + objShut + `}`, `"deep-obj"`, CodeInvalidArgument},
		{"nested id", `{"id":` + open + shut + `,"method":"echo"}`, `""`, CodeInvalidArgument},
		{"nested method", `{"id":"m","method":` + objOpen + "1" + objShut + `}`, `"m"`, CodeInvalidArgument},
		{"nested cursor", `{"id":"f","method":"decode","params":{"cursor":` + objOpen + "1" + objShut + `}}`, `"f"`, CodeInvalidArgument},
		// Within the depth limit the request parses, and the strict
		// decoder's duplicate-key walk recurses through all of it.
		{"deep cursor arrays", `{"id":"d9k","method":"decode","params":{"cursor":` + strings.Repeat("[", near) + strings.Repeat("]", near) + `}}`, `"d9k"`, CodeCursorInvalid},
		{"deep cursor objects", `{"id":"o9k","method":"decode","params":{"cursor":` + strings.Repeat(`{"a":`, near) + "1" + strings.Repeat("}", near) + `}}`, `"o9k"`, CodeCursorInvalid},
		{"deep duplicate key", `{"id":"dup","method":"decode","params":{"cursor":` + strings.Repeat(`{"a":`, near) + `{"b":1,"b":2}` + strings.Repeat("}", near) + `}}`, `"dup"`, CodeInvalidArgument},
		{"deep unknown field", `{"id":"u9k","method":"decode","params":{"x":` + strings.Repeat(`{"a":`, near) + "1" + strings.Repeat("}", near) + `}}`, `"u9k"`, CodeInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.write(tc.line + "\n")
			line := c.readLine()
			wantCleanLine(t, line)
			var r Response
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			wantCode(t, r, tc.code)
			if string(r.ID) != tc.id {
				t.Fatalf("id = %s, want %s", r.ID, tc.id)
			}
			if len(r.Error.Message) > 512 {
				t.Fatalf("message is %d bytes", len(r.Error.Message))
			}
		})
	}
	wantResult(t, c.call(`{"id":"alive","method":"echo"}`), `"alive"`)
}

func TestAbuseIDControlCharsAndUTF8(t *testing.T) {
	_, path := startServer(t, abuseMux(), Limits{})
	c := dialT(t, path)
	accepted := []struct{ name, token, decoded string }{
		{"escaped C0 and ESC", `"\u0000\u001b[2K\u0007\b\f\n\r\t"`, "\x00\x1b[2K\x07\b\f\n\r\t"},
		{"escaped DEL and C1", `"\u007f\u0085\u009b31m"`, "\x7f\u0085\u009b31m"},
		{"line separators", "\"\u2028\u2029\"", "\u2028\u2029"},
		{"escaped separators", `"\u2028\u2029"`, "\u2028\u2029"},
		{"quotes and backslashes", `"\"\\\/"`, `"\/`},
		{"bidi override", "\"\u202egnp.exe\"", "\u202egnp.exe"},
		{"empty", `""`, ""},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			c.write(`{"id":` + tc.token + `,"method":"echo"}` + "\n")
			line := c.readLine()
			wantCleanLine(t, line)
			var r Response
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			if r.Error != nil {
				t.Fatalf("error %v", r.Error)
			}
			if string(r.ID) != tc.token {
				t.Fatalf("id echoed as %s, want the token %s exactly", r.ID, tc.token)
			}
			var s string
			if err := json.Unmarshal(r.ID, &s); err != nil || s != tc.decoded {
				t.Fatalf("echoed id decodes to %q (%v), want %q", s, err, tc.decoded)
			}
		})
	}
	// A lone surrogate escape is ASCII on the wire: echoed as spelled.
	wantResult(t, c.call(`{"id":"\ud800","method":"echo"}`), `"\ud800"`)
	for _, num := range []string{`-0`, `1e400`, `0.000001`, `-1.5E-7`} {
		wantResult(t, c.call(`{"id":`+num+`,"method":"echo"}`), num)
	}

	rejected := []struct{ name, line, id string }{
		// Raw control bytes inside a string are not JSON; the id cannot be
		// recovered from before the damage.
		{"raw ESC", "{\"id\":\"\x1b[2K\",\"method\":\"echo\"}", `""`},
		{"raw NUL", "{\"id\":\"a\x00b\",\"method\":\"echo\"}", `""`},
		{"raw newline split", "{\"id\":\"a\rb\",\"method\":\"echo\"}", `""`},
		{"raw ESC in method", "{\"id\":\"esc-method\",\"method\":\"ec\x1bho\"}", `"esc-method"`},
		{"escaped ESC in method", `{"id":"esc-method2","method":"ec\u001bho"}`, `"esc-method2"`},
		{"invalid UTF-8 in method", "{\"id\":\"bad-method\",\"method\":\"\xff\xfe\"}", `"bad-method"`},
		{"bool id", `{"id":true,"method":"echo"}`, `""`},
		{"object id", `{"id":{"\u001b":1},"method":"echo"}`, `""`},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			c.write(tc.line + "\n")
			line := c.readLine()
			wantCleanLine(t, line)
			var r Response
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			wantCode(t, r, CodeInvalidArgument)
			if string(r.ID) != tc.id {
				t.Fatalf("id = %s, want %s", r.ID, tc.id)
			}
		})
	}

	// Invalid UTF-8 in an id cannot be echoed as sent in valid JSON: the
	// request is refused, echoing the id with U+FFFD in place of the bad
	// bytes, on a line that is valid UTF-8.
	for _, raw := range []string{"\xff", "ok\xfe\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\xc0\xaf"} {
		t.Run(fmt.Sprintf("invalid UTF-8 %q", raw), func(t *testing.T) {
			c.write("{\"id\":\"" + raw + "\",\"method\":\"echo\"}\n")
			line := c.readLine()
			wantCleanLine(t, line)
			var r Response
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			wantCode(t, r, CodeInvalidArgument)
			if r.Error.Field != "id" {
				t.Fatalf("field = %q, want id", r.Error.Field)
			}
			var s string
			if err := json.Unmarshal(r.ID, &s); err != nil || !utf8.ValidString(s) || !strings.Contains(s, "\uFFFD") {
				t.Fatalf("echoed id %s (%v), want the id with U+FFFD for the bad bytes", r.ID, err)
			}
		})
	}
	wantResult(t, c.call(`{"id":"still-alive","method":"echo"}`), `"still-alive"`)
}

func TestAbuseIDLengthMultibyte(t *testing.T) {
	_, path := startServer(t, abuseMux(), Limits{})
	c := dialT(t, path)
	for _, tc := range []struct {
		name string
		unit string // repeated to exactly MaxIDBytes bytes
	}{
		{"2-byte runes", "é"},
		{"3-byte runes", "€"},
		{"4-byte runes", "😀"},
		{"escaped 2-byte runes", `\u00e9`},
		{"escaped surrogate pairs", `\ud83d\ude00`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var decodedUnit string
			if err := json.Unmarshal([]byte(`"`+tc.unit+`"`), &decodedUnit); err != nil {
				t.Fatal(err)
			}
			reps := MaxIDBytes / len(decodedUnit)
			fill := MaxIDBytes - reps*len(decodedUnit) // ASCII padding to 200
			exact := strings.Repeat(tc.unit, reps) + strings.Repeat("a", fill)
			decodedExact := strings.Repeat(decodedUnit, reps) + strings.Repeat("a", fill)
			if len(decodedExact) != MaxIDBytes {
				t.Fatalf("setup: %d bytes", len(decodedExact))
			}
			// Exactly 200 decoded bytes: accepted and echoed as spelled.
			wantResult(t, c.call(`{"id":"`+exact+`","method":"echo"}`), `"`+exact+`"`)

			// 201 bytes: one more ASCII byte, or one more whole rune.
			for _, over := range []string{exact + "b", strings.Repeat(tc.unit, reps+1)} {
				var decodedOver string
				json.Unmarshal([]byte(`"`+over+`"`), &decodedOver)
				if len(decodedOver) <= MaxIDBytes {
					continue // the rune did not push it over
				}
				c.write(`{"id":"` + over + `","method":"echo"}` + "\n")
				line := c.readLine()
				wantCleanLine(t, line)
				var r Response
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatal(err)
				}
				wantCode(t, r, CodeInvalidArgument)
				var s string
				if err := json.Unmarshal(r.ID, &s); err != nil {
					t.Fatalf("echoed id %s: %v", r.ID, err)
				}
				if s == "" || len(s) > truncatedIDBytes || !utf8.ValidString(s) || !strings.HasPrefix(decodedOver, s) {
					t.Fatalf("echoed id %q is not a clean prefix of at most %d bytes", s, truncatedIDBytes)
				}
				if len(r.ID) > 6*truncatedIDBytes+2 {
					t.Fatalf("echoed id token is %d bytes", len(r.ID))
				}
			}
		})
	}
	// Numbers: 200 digits accepted, 201 refused.
	d200 := strings.Repeat("7", MaxIDBytes)
	wantResult(t, c.call(`{"id":`+d200+`,"method":"echo"}`), d200)
	r := c.call(`{"id":` + d200 + `7,"method":"echo"}`)
	wantCode(t, r, CodeInvalidArgument)
}

// TestAbuseProxyRawOnlyByName checks that the stdio proxy forwards
// transcript.read_raw only under its exact name: near misses are answered
// locally and never reach the daemon.
func TestAbuseProxyRawOnlyByName(t *testing.T) {
	h := startProxy(t, nil)
	for _, m := range []string{
		"transcript.read_raw ", " transcript.read_raw", "Transcript.read_raw",
		"TRANSCRIPT.READ_RAW", "transcript.readRaw", "transcript.read_raw\u0000",
		"transcript.read_raw\n", "transcript.read", "transcript", "internal.transcript.read_raw",
		"session.fetch.raw", "scrollback.read_raw", "internal.terminal.attach",
		"transcript\u002eread_raw\u200b", "transcript.read\u005fraw2",
	} {
		token, _ := json.Marshal(m)
		h.send(t, `{"id":"nm","method":`+string(token)+`}`+"\n")
		r := h.out.nextResp(t)
		if r.Error == nil || r.Error.Code != CodeInvalidArgument || string(r.ID) != `"nm"` {
			t.Fatalf("%q: got %+v, want a local INVALID_ARGUMENT", m, r)
		}
	}
	// The exact name is forwarded byte for byte, escaped spellings of the
	// same name included (they decode to the public method).
	for _, l := range []string{
		`{"id":"raw","method":"transcript.read_raw","params":{"session":"claude:x","after":0,"limit_bytes":4096}}` + "\n",
		`{"id":"raw2","method":"transcript\u002eread_raw","params":{"session":"@a"}}` + "\n",
	} {
		h.send(t, l)
		h.daemon.nc.SetReadDeadline(time.Now().Add(ioTimeout))
		got, err := h.daemon.br.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != l {
			t.Fatalf("daemon got %q, want %q", got, l)
		}
	}
}

// TestAbuseManyConnectionsFlood opens connections past the cap in
// parallel, each flooding a few requests: capped ones are refused with one
// line, served ones get every answer, and the server is left with none.
func TestAbuseManyConnectionsFlood(t *testing.T) {
	srv, path := startServer(t, abuseMux(), Limits{MaxConnections: 4, RateLimit: 10_000})
	var wg sync.WaitGroup
	var served, refused atomic.Int64
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			defer nc.Close()
			var buf bytes.Buffer
			for j := 0; j < 100; j++ {
				fmt.Fprintf(&buf, `{"id":%d,"method":"nop"}`+"\n", j)
			}
			nc.SetDeadline(time.Now().Add(ioTimeout))
			nc.Write(buf.Bytes()) // a refused connection may be closed already
			nc.CloseWrite()
			data, _ := io.ReadAll(nc)
			lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
			switch {
			case len(lines) == 100:
				served.Add(1)
			case len(lines) == 1 && bytes.Contains(lines[0], []byte(CodeRPCUnavailable)):
				refused.Add(1)
			default:
				t.Errorf("connection %d got %d lines: %.200q", i, len(lines), data)
			}
		}()
	}
	wg.Wait()
	if served.Load() == 0 || served.Load()+refused.Load() != 32 {
		t.Fatalf("served %d, refused %d of 32", served.Load(), refused.Load())
	}
	waitFor(t, "every connection to close", func() bool { return srv.ConnCount() == 0 })
}
