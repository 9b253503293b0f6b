package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxIDBytes bounds a request id (the decoded string, or a number's
// literal). Longer ids are rejected, echoing only a prefix.
const MaxIDBytes = 200

// Request is the wire request envelope. ID keeps its raw JSON spelling (a
// string or a number) so it is echoed exactly; Params stays raw until the
// handler of Method decodes it.
type Request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Response is the wire response envelope: exactly one of Result or Error.
type Response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
	Info   json.RawMessage `json:"info,omitempty"`
}

// emptyID is echoed when no id can be recovered from a bad request.
var emptyID = json.RawMessage(`""`)

// ParseRequest decodes one request line strictly. On failure it returns
// the id recovered from the line where possible (else "") and a typed
// INVALID_ARGUMENT; the caller answers with that id.
func ParseRequest(line []byte) (*Request, json.RawMessage, *Error) {
	fields, err := objectFields(line)
	if err != nil {
		return nil, recoverID(line), InvalidField("request", "%v", err)
	}
	req := &Request{}
	id, hasID := fields["id"]
	if hasID {
		checked, e := checkID(id)
		if e != nil {
			return nil, checked, e
		}
		req.ID = checked
	} else {
		req.ID = emptyID
	}
	for k := range fields {
		if k != "id" && k != "method" && k != "params" {
			return nil, req.ID, InvalidField(k, "unknown field")
		}
	}
	m, ok := fields["method"]
	if !ok {
		return nil, req.ID, InvalidField("method", "required field is missing")
	}
	if firstByte(m) != '"' || json.Unmarshal(m, &req.Method) != nil {
		return nil, req.ID, InvalidField("method", "must be a string")
	}
	if p, ok := fields["params"]; ok && !bytes.Equal(bytes.TrimSpace(p), []byte("null")) {
		if t := firstByte(p); t != '{' {
			return nil, req.ID, InvalidField("params", "must be an object")
		}
		req.Params = p
	}
	return req, req.ID, nil
}

// checkID validates an id token: a string or a number of at most
// MaxIDBytes. An over-long id is answered with a truncated string prefix.
func checkID(raw json.RawMessage) (json.RawMessage, *Error) {
	switch firstByte(raw) {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return emptyID, InvalidField("id", "must be a string or a number")
		}
		if len(s) > MaxIDBytes {
			return truncatedID(s), InvalidField("id", "longer than %d bytes", MaxIDBytes)
		}
		if !utf8.Valid(raw) {
			// Echoed as sent, the id would make the response line invalid
			// UTF-8 (not JSON to a strict reader). Refuse it, echoing the
			// decoded id, where U+FFFD stands for each bad byte.
			b, _ := json.Marshal(s)
			return b, InvalidField("id", "must be valid UTF-8")
		}
		return raw, nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		lit := bytes.TrimSpace(raw)
		if len(lit) > MaxIDBytes {
			return truncatedID(string(lit)), InvalidField("id", "longer than %d bytes", MaxIDBytes)
		}
		return lit, nil
	default:
		return emptyID, InvalidField("id", "must be a string or a number")
	}
}

// truncatedIDBytes is how much of an over-long id an error echoes.
const truncatedIDBytes = 32

func truncatedID(s string) json.RawMessage {
	cut := truncatedIDBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	b, _ := json.Marshal(s[:cut])
	return b
}

// recoverID scans a line that failed to parse for a top-level "id" member
// that precedes the damage, so the error can still be correlated.
func recoverID(line []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return emptyID
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return emptyID
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return emptyID
		}
		if key == "id" {
			if id, e := checkID(val); e == nil {
				return id
			}
			return emptyID
		}
	}
	return emptyID
}

func firstByte(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// objectFields splits a JSON object into its members, rejecting anything
// that is not exactly one object, trailing data, and duplicate keys
// (encoding/json would silently keep the last one).
func objectFields(data []byte) (map[string]json.RawMessage, error) {
	if fields, ok := plainObjectFields(data); ok {
		return fields, nil
	}
	return decodedObjectFields(data)
}

// decodedObjectFields is objectFields through a json.Decoder: every line,
// and the only path that reports errors.
func decodedObjectFields(data []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", syntaxMessage(err))
	}
	if tok != json.Delim('{') {
		return nil, errors.New("must be a JSON object")
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", syntaxMessage(err))
		}
		key := t.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", syntaxMessage(err))
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		fields[key] = val
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", syntaxMessage(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	return fields, nil
}

// plainObjectFields is objectFields for the common line: valid JSON, one
// object, keys of plain printable ASCII (no escapes), no duplicate key. It
// splits the object without a json.Decoder (which was most of a quick
// request's allocations); anything else reports !ok and objectFields takes
// its general path, so every error reads as before. The values are the
// members' exact bytes, as the Decoder gives them, in one copy of data.
func plainObjectFields(data []byte) (map[string]json.RawMessage, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	data = bytes.Clone(data) // the values outlive the caller's line buffer
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	fields := make(map[string]json.RawMessage, 4)
	i = skipSpace(data, i+1)
	if data[i] == '}' {
		return fields, true
	}
	for {
		// A key: valid JSON puts a string here.
		j := i + 1
		for j < len(data) && data[j] != '"' {
			if c := data[j]; c == '\\' || c < 0x20 || c > 0x7e {
				return nil, false
			}
			j++
		}
		key := string(data[i+1 : j])
		if _, dup := fields[key]; dup {
			return nil, false
		}
		i = skipSpace(data, j+1) // at the colon
		i = skipSpace(data, i+1)
		end := valueEnd(data, i)
		fields[key] = json.RawMessage(data[i:end:end])
		i = skipSpace(data, end)
		if data[i] == '}' {
			return fields, true
		}
		i = skipSpace(data, i+1) // past the comma
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// valueEnd is the end of the JSON value starting at i of valid JSON.
func valueEnd(data []byte, i int) int {
	depth := 0
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

func syntaxMessage(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	return err.Error()
}

// fieldInfo describes the wire keys of a parameter struct.
type fieldInfo struct {
	known    map[string]reflect.Type
	required []string
}

var fieldCache sync.Map // reflect.Type -> *fieldInfo

func fieldsOf(t reflect.Type) *fieldInfo {
	if fi, ok := fieldCache.Load(t); ok {
		return fi.(*fieldInfo)
	}
	fi := &fieldInfo{known: map[string]reflect.Type{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		fi.known[name] = f.Type
		if f.Tag.Get("rpc") == "required" {
			fi.required = append(fi.required, name)
		}
	}
	fieldCache.Store(t, fi)
	return fi
}

// Decode strictly decodes params (a JSON object, or empty for "no params")
// into v, a pointer to a parameter struct. Unknown keys (matched exactly:
// no case folding), duplicate keys, wrong types, trailing data and missing
// required keys are INVALID_ARGUMENT naming the field.
func Decode(params json.RawMessage, v any) *Error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic("rpc.Decode: v must be a pointer to a struct")
	}
	info := fieldsOf(rv.Elem().Type())
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage("{}")
	}
	fields, err := objectFields(params)
	if err != nil {
		return InvalidField("params", "%v", err)
	}
	for k := range fields {
		if _, ok := info.known[k]; !ok {
			return InvalidField(k, "unknown field")
		}
	}
	for _, k := range info.required {
		if _, ok := fields[k]; !ok {
			return InvalidField(k, "required field is missing")
		}
	}
	for k, raw := range fields {
		ft := info.known[k]
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) && ft.Kind() != reflect.Pointer && ft.Kind() != reflect.Slice && ft.Kind() != reflect.Map && ft != rawMessageType {
			return InvalidField(k, "must not be null")
		}
		ptr := reflect.New(ft)
		if err := json.Unmarshal(raw, ptr.Interface()); err != nil {
			return InvalidField(k, "%s", typeMessage(err, ft))
		}
		// encoding/json keeps the last of duplicate keys in a nested
		// object (environment); reject them like top-level ones.
		if c := firstByte(raw); c == '{' || c == '[' {
			if err := noDuplicateKeys(json.NewDecoder(bytes.NewReader(raw))); err != nil {
				return InvalidField(k, "%v", err)
			}
		}
	}
	// Every member checked individually; decode the whole for real.
	if err := json.Unmarshal(params, v); err != nil {
		return InvalidField("params", "%v", err)
	}
	return nil
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// noDuplicateKeys walks one JSON value (already known to be valid) and
// reports the first object that repeats a key.
func noDuplicateKeys(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			if seen[key] {
				return fmt.Errorf("duplicate key %q", key)
			}
			seen[key] = true
			if err := noDuplicateKeys(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if err := noDuplicateKeys(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}

func typeMessage(err error, t reflect.Type) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("expected %s, got %s", wireType(t), te.Value)
	}
	return err.Error()
}

// wireType names a Go type the way a JSON author thinks of it.
func wireType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return wireType(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integer"
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		return "non-negative integer"
	case reflect.Slice:
		return "array of " + wireType(t.Elem())
	case reflect.Map:
		return "object of " + wireType(t.Elem())
	}
	return t.String()
}

// MarshalResponse renders one compact response line (with its newline).
// A result that cannot be encoded becomes an INTERNAL error response.
func MarshalResponse(id json.RawMessage, result any, rerr *Error) []byte {
	if len(id) == 0 {
		id = emptyID
	}
	resp := Response{ID: id}
	if rerr != nil {
		resp.Error = rerr
	} else {
		b, err := encodeResult(result)
		if err != nil {
			resp.Error = Errorf(CodeInternal, "encoding result: %v", err)
		} else if compactToken(id) {
			// The result is already compact JSON: splice it rather than
			// have encoding/json validate and re-compact it, which is most
			// of the cost of answering a thousand woken long polls. The
			// bytes are the same as the struct encoding's.
			line := make([]byte, 0, len(id)+len(b)+len(`{"id":,"result":}`)+1)
			line = append(append(append(line, `{"id":`...), id...), `,"result":`...)
			return append(append(line, b...), "}\n"...)
		} else {
			resp.Result = b
		}
	}
	line, err := marshalCompact(resp)
	if err != nil {
		line, _ = marshalCompact(Response{ID: emptyID, Error: Errorf(CodeInternal, "encoding response: %v", err)})
	}
	return append(line, '\n')
}

// encodeResult is the compact encoding of a result, reusing a sealed
// document's.
func encodeResult(result any) ([]byte, error) {
	if d, ok := result.(*FetchDocument); ok && d.wire != nil {
		return d.wire, nil
	}
	return marshalCompact(result)
}

// compactToken reports whether id is one JSON value with no whitespace
// around it, so it can be spliced into a line as is.
func compactToken(id json.RawMessage) bool {
	if len(id) == 0 || len(bytes.TrimSpace(id)) != len(id) || !json.Valid(id) {
		return false
	}
	c := id[0]
	return c == '"' || c == '-' || (c >= '0' && c <= '9')
}

// marshalCompact encodes without HTML escaping, so "<" and "&" in prompts
// and screen text stay readable on the wire.
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Marshal encodes v compactly without HTML escaping (the wire encoding).
func Marshal(v any) ([]byte, error) { return marshalCompact(v) }

// ParsePosition reads a fetch cursor: absent or null is a baseline (ok ==
// false); a JSON number or a string of digits is a position, leading zeros
// allowed; anything else is CURSOR_INVALID.
func ParsePosition(raw json.RawMessage) (pos uint64, ok bool, rerr *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, false, nil
	}
	digits := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &digits); err != nil {
			return 0, false, Errorf(CodeCursorInvalid, "cursor is not a position")
		}
	}
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false, Errorf(CodeCursorInvalid, "cursor %s is not a position number", clip(string(raw), 40))
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, false, Errorf(CodeCursorInvalid, "cursor %s is out of range", clip(digits, 40))
	}
	return n, true, nil
}

// FormatPosition spells a position as the wire does: digits, no leading zeros.
func FormatPosition(pos uint64) string { return strconv.FormatUint(pos, 10) }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
