package rpc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// wantInvalid asserts e is an INVALID_ARGUMENT whose message names field.
func wantInvalid(t testing.TB, e *Error, field string) {
	t.Helper()
	if e == nil {
		t.Fatalf("got no error, want INVALID_ARGUMENT naming %q", field)
	}
	if e.Code != CodeInvalidArgument {
		t.Fatalf("code = %s (%q), want INVALID_ARGUMENT", e.Code, e.Message)
	}
	if !strings.Contains(e.Message, field) {
		t.Fatalf("message %q does not name %q", e.Message, field)
	}
}

func TestParseRequestEnvelope(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		method string
		id     string
		params string
	}{
		{"string id", `{"id":"req_1","method":"session.list","params":{"all":true}}`, "session.list", `"req_1"`, `{"all":true}`},
		{"number id", `{"id":42,"method":"session.list"}`, "session.list", `42`, ``},
		{"negative fractional id echoed as spelled", `{"id":-1.5e3,"method":"x"}`, "x", `-1.5e3`, ``},
		{"missing id echoes empty string", `{"method":"session.list"}`, "session.list", `""`, ``},
		{"null params is no params", `{"id":1,"method":"profile.list","params":null}`, "profile.list", `1`, ``},
		{"whitespace tolerated", " \t{ \"id\" : 7 , \"method\" : \"m\" } \r", "m", `7`, ``},
		{"escaped key is the same key", `{"\u0069d":"a","method":"m"}`, "m", `"a"`, ``},
		{"escaped id echoed verbatim", `{"id":"a\u0000b","method":"m"}`, "m", `"a\u0000b"`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, id, err := ParseRequest([]byte(tt.line))
			if err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
			if req.Method != tt.method || string(req.ID) != tt.id || string(id) != tt.id || string(req.Params) != tt.params {
				t.Fatalf("got method=%q id=%s (returned %s) params=%s; want %q %s %s", req.Method, req.ID, id, req.Params, tt.method, tt.id, tt.params)
			}
		})
	}
}

func TestParseRequestRejects(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		field string // named in the message
		id    string // echoed id
	}{
		{"not JSON", `hello`, "request", `""`},
		{"truncated object keeps id", `{"id":"keep","method":"session.list","params":{"all":`, "request", `"keep"`},
		{"damage before id loses it", `{"method":, "id":"lost"}`, "request", `""`},
		{"array", `[1,2]`, "request", `""`},
		{"string", `"x"`, "request", `""`},
		{"trailing object", `{"id":1,"method":"m"}{}`, "request", `1`},
		{"trailing garbage", `{"id":1,"method":"m"} x`, "request", `1`},
		{"duplicate key", `{"id":1,"method":"a","method":"b"}`, "duplicate", `1`},
		{"duplicate id", `{"id":1,"id":2,"method":"a"}`, "duplicate", `1`},
		{"unknown field", `{"id":"u","method":"m","jsonrpc":"2.0"}`, "jsonrpc", `"u"`},
		{"case-folded field is unknown", `{"id":"u","Method":"m"}`, "Method", `"u"`},
		{"missing method", `{"id":"u"}`, "method", `"u"`},
		{"method wrong type", `{"id":"u","method":5}`, "method", `"u"`},
		{"method null", `{"id":"u","method":null}`, "method", `"u"`},
		{"params array", `{"id":"u","method":"m","params":[]}`, "params", `"u"`},
		{"params string", `{"id":"u","method":"m","params":"x"}`, "params", `"u"`},
		{"id bool", `{"id":true,"method":"m"}`, "id", `""`},
		{"id null", `{"id":null,"method":"m"}`, "id", `""`},
		{"id object", `{"id":{"a":1},"method":"m"}`, "id", `""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, id, err := ParseRequest([]byte(tt.line))
			wantInvalid(t, err, tt.field)
			if string(id) != tt.id {
				t.Fatalf("echoed id = %s, want %s", id, tt.id)
			}
		})
	}
}

func TestParseRequestIDBound(t *testing.T) {
	t.Run("200 bytes accepted", func(t *testing.T) {
		id := strings.Repeat("a", MaxIDBytes)
		req, _, err := ParseRequest([]byte(`{"id":"` + id + `","method":"m"}`))
		if err != nil {
			t.Fatalf("ParseRequest: %v", err)
		}
		if string(req.ID) != `"`+id+`"` {
			t.Fatalf("id not echoed")
		}
	})
	t.Run("201 bytes rejected with prefix", func(t *testing.T) {
		id := strings.Repeat("b", MaxIDBytes+1)
		_, echoed, err := ParseRequest([]byte(`{"id":"` + id + `","method":"m"}`))
		wantInvalid(t, err, "id")
		var s string
		if uerr := json.Unmarshal(echoed, &s); uerr != nil {
			t.Fatalf("echoed id %s is not a JSON string: %v", echoed, uerr)
		}
		if s == "" || len(s) >= len(id) || !strings.HasPrefix(id, s) {
			t.Fatalf("echoed id %q is not a truncated prefix", s)
		}
	})
	t.Run("multibyte prefix cut at a rune boundary", func(t *testing.T) {
		id := strings.Repeat("é", 150) // 300 bytes
		_, echoed, err := ParseRequest([]byte(`{"id":"` + id + `","method":"m"}`))
		wantInvalid(t, err, "id")
		var s string
		if uerr := json.Unmarshal(echoed, &s); uerr != nil || !strings.HasPrefix(id, s) || strings.ContainsRune(s, '\uFFFD') {
			t.Fatalf("echoed id %q (%v) is not a clean prefix", echoed, uerr)
		}
	})
	t.Run("long number rejected", func(t *testing.T) {
		id := strings.Repeat("9", MaxIDBytes+1)
		_, echoed, err := ParseRequest([]byte(`{"id":` + id + `,"method":"m"}`))
		wantInvalid(t, err, "id")
		if len(echoed) > 64 || !json.Valid(echoed) {
			t.Fatalf("echoed id %s is not a short valid JSON value", echoed)
		}
	})
	t.Run("escaped length counts decoded bytes", func(t *testing.T) {
		// 200 decoded bytes spelled with 1200 bytes of escapes are accepted
		// and echoed as spelled.
		id := strings.Repeat(`\u0001`, MaxIDBytes)
		req, _, err := ParseRequest([]byte(`{"id":"` + id + `","method":"m"}`))
		if err != nil {
			t.Fatalf("ParseRequest: %v", err)
		}
		if string(req.ID) != `"`+id+`"` {
			t.Fatalf("id not echoed verbatim")
		}
	})
}

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name   string
		params string
		v      any
		field  string
	}{
		{"unknown field", `{"session":"codex:x","sesion":"y"}`, &SessionReadParams{}, "sesion"},
		{"case-folded key is unknown", `{"Session":"codex:x"}`, &SessionReadParams{}, "Session"},
		{"missing required", `{}`, &SessionReadParams{}, "session"},
		{"missing request_id", `{"session":"codex:x","prompt":"p"}`, &SessionSendParams{}, "request_id"},
		{"wrong type string", `{"session":5}`, &SessionReadParams{}, "session"},
		{"wrong type bool", `{"all":"yes"}`, &SessionListParams{}, "all"},
		{"wrong type int", `{"session":"codex:x","lines":"10"}`, &ScrollbackReadParams{}, "lines"},
		{"fraction for int", `{"session":"codex:x","lines":1.5}`, &ScrollbackReadParams{}, "lines"},
		{"negative for unsigned", `{"after":-1}`, &EventReadParams{}, "after"},
		{"null for non-nullable", `{"session":null}`, &SessionReadParams{}, "session"},
		{"array element type", `{"title":"t","harness":"claude","cwd":"/","prompt":"p","request_id":"r","harness_options":[1]}`, &SessionCreateParams{}, "harness_options"},
		{"map value type", `{"session":"codex:x","environment":{"A":1}}`, &SessionRestartParams{}, "environment"},
		{"duplicate key", `{"session":"a","session":"b"}`, &SessionReadParams{}, "duplicate"},
		{"duplicate nested key", `{"session":"codex:x","environment":{"A":"1","A":"2"}}`, &SessionRestartParams{}, "environment"},
		{"trailing data", `{"session":"a"} {}`, &SessionReadParams{}, "params"},
		{"not an object", `["session"]`, &SessionReadParams{}, "params"},
		{"invalid JSON", `{"session":`, &SessionReadParams{}, "params"},
		{"no params for a required field", ``, &ModelListParams{}, "harness"},
		{"any field on empty params", `{"x":1}`, &ProfileListParams{}, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantInvalid(t, Decode(json.RawMessage(tt.params), tt.v), tt.field)
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	var p SessionFetchParams
	if err := Decode(json.RawMessage(`{"session":"codex:019f6307-341e-7e81-8a33-7ab61e804345","cursor":null,"screen":true,"wait_ms":900000}`), &p); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if p.Session != "codex:019f6307-341e-7e81-8a33-7ab61e804345" || p.WaitMS != 900000 || string(p.Screen) != "true" {
		t.Fatalf("decoded %+v", p)
	}
	if _, ok, err := ParsePosition(p.Cursor); err != nil || ok {
		t.Fatalf("null cursor: ok=%v err=%v, want baseline", ok, err)
	}
	var c SessionCancelParams
	if err := Decode(json.RawMessage(`{"session":"claude:8bc7859c","timeout_ms":null}`), &c); err != nil || c.TimeoutMS != nil {
		t.Fatalf("nullable pointer: %v %+v", err, c)
	}
	var none ProfileListParams
	for _, params := range []string{``, `{}`, " {\n} "} {
		if err := Decode(json.RawMessage(params), &none); err != nil {
			t.Fatalf("Decode(%q): %v", params, err)
		}
	}
}

func TestParsePosition(t *testing.T) {
	ok := []struct {
		raw  string
		want uint64
	}{
		{`0`, 0}, {`4`, 4}, {`"4"`, 4}, {`"0004"`, 4}, {`"000"`, 0},
		{` 17 `, 17}, {`18446744073709551615`, 18446744073709551615},
		{`"18446744073709551615"`, 18446744073709551615},
	}
	for _, tt := range ok {
		pos, present, err := ParsePosition(json.RawMessage(tt.raw))
		if err != nil || !present || pos != tt.want {
			t.Errorf("ParsePosition(%s) = %d, %v, %v; want %d", tt.raw, pos, present, err, tt.want)
		}
		if got := FormatPosition(pos); present && got != FormatPosition(tt.want) {
			t.Errorf("FormatPosition = %q", got)
		}
	}
	if got := FormatPosition(4); got != "4" {
		t.Errorf("FormatPosition(4) = %q", got)
	}
	for _, raw := range []string{``, `null`, ` null `} {
		if _, present, err := ParsePosition(json.RawMessage(raw)); present || err != nil {
			t.Errorf("ParsePosition(%q) = %v, %v; want baseline", raw, present, err)
		}
	}
	bad := []string{
		`""`, `"4 "`, `" 4"`, `"-1"`, `-1`, `1.0`, `1e3`, `"1e3"`, `"0x10"`, `"abc"`,
		`true`, `false`, `{}`, `[]`, `["4"]`, `"null"`, `"4`, `"٣"`,
		`18446744073709551616`, `"99999999999999999999999"`, `"+4"`,
	}
	for _, raw := range bad {
		_, _, err := ParsePosition(json.RawMessage(raw))
		if err == nil || err.Code != CodeCursorInvalid {
			t.Errorf("ParsePosition(%s) = %v, want CURSOR_INVALID", raw, err)
		}
		if err != nil && len(err.Message) > 200 {
			t.Errorf("ParsePosition(%s) message too long: %q", raw, err.Message)
		}
	}
}

func TestMarshalResponse(t *testing.T) {
	tests := []struct {
		name   string
		id     json.RawMessage
		result any
		err    *Error
		want   string
	}{
		{"result", json.RawMessage(`"req_1"`), []int{}, nil, `{"id":"req_1","result":[]}` + "\n"},
		{"nil result is null", json.RawMessage(`1`), nil, nil, `{"id":1,"result":null}` + "\n"},
		{"error", json.RawMessage(`"req_1"`), nil, Errorf(CodeCursorExpired, "this daemon no longer holds position 3"), `{"id":"req_1","error":{"code":"CURSOR_EXPIRED","message":"this daemon no longer holds position 3"}}` + "\n"},
		{"missing id is empty string", nil, nil, Errorf(CodeInternal, "x"), `{"id":"","error":{"code":"INTERNAL","message":"x"}}` + "\n"},
		{"no HTML escaping", json.RawMessage(`2`), map[string]string{"t": "<a&b>"}, nil, `{"id":2,"result":{"t":"<a&b>"}}` + "\n"},
		{"unencodable result is INTERNAL", json.RawMessage(`3`), func() {}, nil, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(MarshalResponse(tt.id, tt.result, tt.err))
			if tt.want == "" {
				var r Response
				if err := json.Unmarshal([]byte(got), &r); err != nil || r.Error == nil || r.Error.Code != CodeInternal || string(r.ID) != "3" {
					t.Fatalf("got %q (%v), want an INTERNAL error for id 3", got, err)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
			if strings.Contains(got, `"ok"`) {
				t.Fatalf("raw response wraps in ok: %s", got)
			}
		})
	}
}

func TestErrorIs(t *testing.T) {
	var err error = Errorf(CodeCursorExpired, "gone")
	if !errors.Is(err, ErrCursorExpired) || errors.Is(err, ErrCursorInvalid) {
		t.Fatalf("errors.Is by code broken")
	}
	if e := AsError(errors.New("boom")); e.Code != CodeInternal || e.Message != "boom" {
		t.Fatalf("AsError(plain) = %+v", e)
	}
	if len(Codes) != 15 {
		t.Fatalf("len(Codes) = %d, want the 15 v1 codes", len(Codes))
	}
	if len(PublicMethods) != 18 {
		t.Fatalf("len(PublicMethods) = %d, want the 15 v1 methods, session.respond, session.diff and session.warm", len(PublicMethods))
	}
	for _, m := range PublicMethods {
		if !IsPublic(m) {
			t.Fatalf("IsPublic(%q) = false", m)
		}
	}
	for _, m := range []string{MethodHookDeliver, MethodDaemonStatus, MethodDaemonShutdown, MethodTerminalAttach, MethodTerminalInput, MethodTerminalResize, MethodTerminalDetach, "", "Session.list", "session.list "} {
		if IsPublic(m) {
			t.Fatalf("IsPublic(%q) = true", m)
		}
	}
}
