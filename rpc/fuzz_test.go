package rpc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// maxEchoedID bounds an echoed id: MaxIDBytes decoded bytes, each spelled
// with at most a six-byte \u escape, plus quotes.
const maxEchoedID = 6*MaxIDBytes + 2

// allParams returns a fresh pointer to every params type.
func allParams() []any {
	return []any{
		&SessionCreateParams{}, &SessionRestartParams{}, &SessionSendParams{},
		&SessionFetchParams{}, &SessionCancelParams{}, &SessionListParams{},
		&SessionReadParams{}, &SessionStopParams{}, &EventReadParams{},
		&ScrollbackReadParams{}, &TranscriptReadRawParams{}, &ModelListParams{},
		&ProfileListParams{}, &HarnessListParams{},
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":"req_1","method":"session.fetch","params":{"session":"codex:019f6307-341e-7e81-8a33-7ab61e804345","until":"result","wait_ms":900000}}`,
		`{"id":1,"method":"session.list","params":{"all":true}}`,
		`{"id":"x","method":"session.fetch","params":{"cursor":"0004","screen":12}}`,
		`{"id":"` + strings.Repeat("i", MaxIDBytes+1) + `","method":"m"}`,
		`{"id":"` + strings.Repeat(`\u0001`, MaxIDBytes) + `","method":"m","x":1}`,
		`{"id":1,"id":2,"method":"m"}`,
		`{"id":"a","method":"session.create","params":{"title":"t","harness":"claude","cwd":"/","prompt":"p","request_id":"r","environment":{"A":"1","A":"2"}}}`,
		`{"id":"a","method":"m"} {}`,
		`{"id":"a","method":null}`,
		`{"id":"a","method":"m","params":[]}`,
		`{"id":"a`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		req, id, perr := ParseRequest(line)
		if perr != nil {
			if perr.Code != CodeInvalidArgument {
				t.Fatalf("ParseRequest error code %s", perr.Code)
			}
			if !json.Valid(id) || !utf8.Valid(id) || len(id) > maxEchoedID {
				t.Fatalf("echoed id %q is not valid UTF-8 JSON of at most %d bytes", id, maxEchoedID)
			}
			if c := firstByte(id); c != '"' && c != '-' && (c < '0' || c > '9') {
				t.Fatalf("echoed id %s is neither a string nor a number", id)
			}
			resp := MarshalResponse(id, nil, perr)
			var env Response
			if err := json.Unmarshal(resp, &env); err != nil || env.Error == nil {
				t.Fatalf("error response %q does not decode: %v", resp, err)
			}
			return
		}
		if !json.Valid(req.ID) || !utf8.Valid(req.ID) || len(req.ID) > maxEchoedID {
			t.Fatalf("accepted id %q is not valid UTF-8 JSON of at most %d bytes", req.ID, maxEchoedID)
		}
		// The envelope re-marshals and parses back to the same request.
		again, err := Marshal(req)
		if err != nil {
			t.Fatalf("re-marshal request: %v", err)
		}
		req2, _, perr := ParseRequest(again)
		if perr != nil {
			t.Fatalf("re-marshaled request %s does not parse: %v", again, perr)
		}
		if req2.Method != req.Method || !bytes.Equal(compactJSON(t, req2.ID), compactJSON(t, req.ID)) {
			t.Fatalf("re-parse changed the request: %+v vs %+v", req2, req)
		}
		for _, p := range allParams() {
			if Decode(req.Params, p) != nil {
				continue
			}
			b, err := Marshal(p)
			if err != nil {
				t.Fatalf("re-marshal %T: %v", p, err)
			}
			p2 := reflect.New(reflect.TypeOf(p).Elem()).Interface()
			if derr := Decode(b, p2); derr != nil {
				t.Fatalf("re-marshaled %T %s does not decode: %v", p, b, derr)
			}
			b2, _ := Marshal(p2)
			if !bytes.Equal(b, b2) {
				t.Fatalf("%T does not round-trip:\n%s\n%s", p, b, b2)
			}
			if fp, ok := p.(*SessionFetchParams); ok {
				fuzzCheckPosition(t, fp.Cursor)
			}
		}
	})
}

func compactJSON(t testing.TB, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatalf("compact %q: %v", raw, err)
	}
	return buf.Bytes()
}

func FuzzParsePosition(f *testing.F) {
	for _, s := range []string{``, `null`, `0`, `4`, `"4"`, `"0004"`, `"-1"`, `1.5`, `1e3`, `true`, `{}`, `"abc"`, `"4`, `18446744073709551616`, `"\u0034"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fuzzCheckPosition(t, raw)
	})
}

// fuzzCheckPosition checks ParsePosition's invariants on any input.
func fuzzCheckPosition(t testing.TB, raw []byte) {
	t.Helper()
	pos, ok, perr := ParsePosition(raw)
	if perr != nil {
		if ok || perr.Code != CodeCursorInvalid {
			t.Fatalf("ParsePosition(%q) = ok %v, %v; want CURSOR_INVALID", raw, ok, perr)
		}
		if len(perr.Message) > 128 {
			t.Fatalf("CURSOR_INVALID message is %d bytes, want it bounded", len(perr.Message))
		}
		return
	}
	if !ok {
		if trimmed := bytes.TrimSpace(raw); len(trimmed) != 0 && string(trimmed) != "null" {
			t.Fatalf("ParsePosition(%q) is a baseline", raw)
		}
		return
	}
	// A position's canonical spelling parses back to itself, as a number and
	// as a string.
	canon := FormatPosition(pos)
	if canon != "0" && strings.HasPrefix(canon, "0") {
		t.Fatalf("FormatPosition(%d) = %q has leading zeros", pos, canon)
	}
	for _, spelled := range []string{canon, `"` + canon + `"`} {
		p2, ok2, err2 := ParsePosition(json.RawMessage(spelled))
		if err2 != nil || !ok2 || p2 != pos {
			t.Fatalf("ParsePosition(%s) = %d %v %v, want %d", spelled, p2, ok2, err2, pos)
		}
	}
}
