package rpc

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"
)

// The allocation-light split of a request line gives what the Decoder
// gives, whenever it takes the line at all, and does not alias the line.
func FuzzPlainObjectFields(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"session.fetch","params":{"all":true,"cursor":"c1"}}`,
		` { "id" : "a\"b" , "method":"m", "params" : { "x" : [1, {"y":"}"}], "z":null } } `,
		`{"id":-1.5e3,"method":"m","params":{"s":"\u00e9\\"}}`,
		`{}`, `{"a":1,"a":2}`, `{"a\u0062":1}`, `{"é":1}`, `[1]`, `"s"`, `{"a":1} x`,
		`{"a":true,"b":false,"c":null,"d":"","e":[],"f":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		plain, ok := plainObjectFields(line)
		if !ok {
			return
		}
		want, err := decodedObjectFields(line)
		if err != nil {
			t.Fatalf("plain split %q, the Decoder refused it: %v", line, err)
		}
		if !maps.EqualFunc(plain, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("%q: plain %q, Decoder %q", line, plain, want)
		}
		for i := range line {
			line[i] = 'X'
		}
		if !maps.EqualFunc(plain, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("the split aliases the line: %q", plain)
		}
	})
}
