package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
)

// contractOrder is the "Public methods" list of the v1 contract, in its
// order, then the extensions (session.respond, session.diff).
var contractOrder = []string{
	"session.create", "session.restart", "session.send", "session.fetch",
	"session.cancel", "session.list", "session.read", "session.stop",
	"event.read", "event.subscribe", "scrollback.read", "transcript.read_raw",
	"model.list", "profile.list", "harness.list",
	// Extensions beyond the v1 list (docs/rpc.md).
	"session.respond", "session.diff", "session.warm",
}

// Every public method has exactly one descriptor, in the contract's order,
// and PublicMethods is their names.
func TestPublicDescriptorsFollowTheContract(t *testing.T) {
	if got := strings.Join(PublicMethods, " "); got != strings.Join(contractOrder, " ") {
		t.Fatalf("PublicMethods = %s\nwant %s", got, strings.Join(contractOrder, " "))
	}
	seen := map[string]int{}
	for i, d := range Public {
		seen[d.MethodName()]++
		if d.MethodName() != contractOrder[i] {
			t.Errorf("Public[%d] = %s, want %s", i, d.MethodName(), contractOrder[i])
		}
	}
	for _, m := range contractOrder {
		if seen[m] != 1 {
			t.Errorf("%s has %d descriptors", m, seen[m])
		}
	}
	if len(Public) != len(contractOrder) {
		t.Errorf("%d descriptors for %d methods", len(Public), len(contractOrder))
	}
}

// goldenLines reads the JSONL lines of one golden file.
func goldenLines(t *testing.T, name string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			out = append(out, append([]byte(nil), l...))
		}
	}
	return out
}

// Each descriptor's result type decodes its method's golden responses
// without an unknown member, and encodes back to the same JSON; each
// params type decodes its golden requests strictly.
func TestDescriptorTypesDecodeTheGoldenFiles(t *testing.T) {
	for _, d := range Public {
		t.Run(d.MethodName(), func(t *testing.T) {
			resps := goldenLines(t, d.MethodName()+".response.jsonl")
			if len(resps) == 0 {
				t.Fatal("no golden response")
			}
			for _, line := range resps {
				var env struct {
					Result json.RawMessage `json:"result"`
				}
				if err := json.Unmarshal(line, &env); err != nil || env.Result == nil {
					t.Fatalf("golden response %s: %v", line, err)
				}
				out := d.NewResult()
				dec := json.NewDecoder(bytes.NewReader(env.Result))
				dec.DisallowUnknownFields()
				if err := dec.Decode(out); err != nil {
					t.Fatalf("%T does not decode %s: %v", out, env.Result, err)
				}
				back, err := Marshal(out)
				if err != nil {
					t.Fatal(err)
				}
				var want, got any
				json.Unmarshal(env.Result, &want)
				json.Unmarshal(back, &got)
				if !reflect.DeepEqual(want, got) {
					t.Fatalf("%T round trip:\n got %s\nwant %s", out, back, env.Result)
				}
			}
			for _, line := range goldenLines(t, d.MethodName()+".request.jsonl") {
				var req Request
				if err := json.Unmarshal(line, &req); err != nil {
					t.Fatal(err)
				}
				if req.Method != d.MethodName() {
					t.Fatalf("request of %s in %s's file", req.Method, d.MethodName())
				}
				if err := Decode(req.Params, d.NewParams()); err != nil {
					t.Fatalf("%T does not decode %s: %v", d.NewParams(), req.Params, err)
				}
			}
		})
	}
}

// A typed call reaches a typed handler: the client's P is what the
// server decodes and the server's R is what the client gets back; bad
// params are refused by Handle before the handler runs.
func TestMethodCallAndHandle(t *testing.T) {
	var ran atomic.Int32 // the handler runs on the server's goroutines
	read := SessionRead.Handle(func(ctx context.Context, _ Peer, p SessionReadParams) (SessionReadResult, error) {
		ran.Add(1)
		if p.Session == "nobody" {
			return SessionReadResult{}, Errorf(CodeNotFound, "no Session %s", p.Session)
		}
		return SessionReadResult{Session: Session{ID: p.Session, State: StateIdle}}, nil
	})
	_, path := startServer(t, mux{MethodSessionRead: func(ctx context.Context, peer Peer, req *Request) (any, error) {
		return read(ctx, peer, req.Params)
	}}, Limits{})
	ctx := context.Background()
	c, err := Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := SessionRead.Call(ctx, c, SessionReadParams{Session: "claude:x"})
	if err != nil || got.Session.ID != "claude:x" || got.Session.State != StateIdle || got.Result != nil {
		t.Fatalf("read = %+v, %v", got, err)
	}
	if _, err := SessionRead.Call(ctx, c, SessionReadParams{Session: "nobody"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read nobody: %v", err)
	}
	var raw json.RawMessage
	if err := c.Call(ctx, MethodSessionRead, map[string]any{"session": "x", "bogus": 1}, &raw); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("unknown member: %v", err)
	}
	if n := ran.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want 2", n)
	}
}

// ticks is a stream of n lines acknowledged with a SubscribeAck.
type ticks struct{ n int }

func (s ticks) Ack() SubscribeAck { return SubscribeAck{Subscribed: true, After: 7} }

func (s ticks) Run(ctx context.Context, emit func([]byte) error) error {
	for i := 0; i < s.n; i++ {
		if err := emit([]byte(`{"tick":true}`)); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

// later is a Deferred that answers with a *SessionListResult at once.
type later struct{ res *SessionListResult }

func (l later) Start(respond func(any, error)) func() {
	respond(l.res, nil)
	return func() {}
}

// HandleReply sends each form of a Reply as an R: a value, a pointer,
// a later answer, pre-encoded members, and a stream's typed ack; an
// error answers alone.
func TestHandleReplyForms(t *testing.T) {
	list := SessionListResult{Sessions: []Session{{ID: "claude:a", State: StateIdle}}}
	listBytes, _ := Marshal(list)
	form := map[string]func() Reply[SessionListResult]{
		"value":   func() Reply[SessionListResult] { return Value(list) },
		"ref":     func() Reply[SessionListResult] { return Ref(&list) },
		"later":   func() Reply[SessionListResult] { return Later[SessionListResult](later{&list}) },
		"encoded": func() Reply[SessionListResult] { return Encoded[SessionListResult](json.RawMessage(listBytes)) },
	}
	h := mux{}
	for name, f := range form {
		h[name] = func(ctx context.Context, peer Peer, req *Request) (any, error) {
			return Method[SessionListParams, SessionListResult]{name}.HandleReply(func(context.Context, Peer, SessionListParams) (Reply[SessionListResult], error) {
				return f(), nil
			})(ctx, peer, req.Params)
		}
	}
	h["fails"] = func(ctx context.Context, peer Peer, req *Request) (any, error) {
		return SessionList.HandleReply(func(context.Context, Peer, SessionListParams) (Reply[SessionListResult], error) {
			return Value(list), Errorf(CodeNotFound, "gone")
		})(ctx, peer, req.Params)
	}
	h["stream"] = func(ctx context.Context, peer Peer, req *Request) (any, error) {
		return EventSubscribe.HandleReply(func(context.Context, Peer, EventReadParams) (Reply[SubscribeAck], error) {
			return Streamed[SubscribeAck](ticks{2}), nil
		})(ctx, peer, req.Params)
	}
	_, path := startServer(t, h, Limits{})
	ctx := context.Background()
	c, err := Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for name := range form {
		var raw json.RawMessage
		if err := c.Call(ctx, name, nil, &raw); err != nil || !bytes.Equal(raw, listBytes) {
			t.Errorf("%s: %s, %v; want %s", name, raw, err, listBytes)
		}
	}
	var raw json.RawMessage
	if err := c.Call(ctx, "fails", nil, &raw); !errors.Is(err, ErrNotFound) || raw != nil {
		t.Errorf("fails: %s, %v", raw, err)
	}
	if err := c.Call(ctx, "value", map[string]any{"bogus": true}, &raw); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("unknown member: %v", err)
	}
	sc, err := Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	ack, next, err := sc.Subscribe(ctx, "stream", nil)
	if err != nil || string(ack) != `{"subscribed":true,"after":7}` {
		t.Fatalf("ack %s, %v", ack, err)
	}
	for i := 0; i < 2; i++ {
		if line, err := next(); err != nil || string(line) != `{"tick":true}` {
			t.Fatalf("line %d: %s, %v", i, line, err)
		}
	}
}
