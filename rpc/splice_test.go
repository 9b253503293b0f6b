package rpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The spliced response line is byte-identical to the struct encoding.
func TestMarshalResponseSpliceMatchesStructEncoding(t *testing.T) {
	results := []any{
		map[string]any{"a": "<&> \u2028 \\ \"", "n": 1.5},
		FetchDocument{SchemaVersion: 1, Reason: ReasonResult, Gaps: []Gap{}, Cursor: "7", Sessions: []FetchSession{}},
		[]string{"x"}, nil, "s",
	}
	ids := []json.RawMessage{json.RawMessage(`"req-1"`), json.RawMessage(`42`), json.RawMessage(`-0.5e3`), json.RawMessage(`"\\u0041<"`)}
	for _, id := range ids {
		for _, r := range results {
			got := MarshalResponse(id, r, nil)
			b, err := marshalCompact(r)
			if err != nil {
				t.Fatal(err)
			}
			want, err := marshalCompact(Response{ID: id, Result: b})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, '\n')
			if !bytes.Equal(got, want) {
				t.Errorf("id %s result %v:\n got %s\nwant %s", id, r, got, want)
			}
		}
	}
}

// A sealed document answers with the bytes its fields encode to.
func TestSealedDocumentMatchesStructEncoding(t *testing.T) {
	text := "done <&> \u2028"
	doc := &FetchDocument{SchemaVersion: 1, Reason: ReasonResult, Gaps: []Gap{}, Cursor: "12",
		Sessions: []FetchSession{{Session: Session{ID: "claude:x"}, Events: []Event{}, Results: []Result{{ExecutionSeq: 3, Status: StatusCompleted, FinalText: &text}}}}}
	want := MarshalResponse(json.RawMessage(`"r"`), doc, nil)
	doc.Seal()
	if doc.wire == nil {
		t.Fatal("Seal stored no encoding")
	}
	for _, id := range []json.RawMessage{json.RawMessage(`"r"`), json.RawMessage(` "r" `)} {
		if got := MarshalResponse(id, doc, nil); !bytes.Equal(got, want) {
			t.Errorf("id %q: sealed\n%s\nunsealed\n%s", id, got, want)
		}
	}
	if b, _ := Marshal(doc); !bytes.Contains(want, b) {
		t.Errorf("the seal leaked into the encoding: %s", b)
	}
}
