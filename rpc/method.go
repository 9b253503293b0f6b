package rpc

import (
	"context"
	"encoding/json"
)

// Method is the typed descriptor of one RPC method: its wire name, its
// parameters P and its result R. A client calls it with Call and a server
// serves it with Handle, so both sides take P and R from the same value and
// a mismatch between them is a compile error rather than a shape the other
// side cannot decode.
type Method[P, R any] struct{ Name string }

// Descriptor is what every Method has in common, for lists of methods of
// different types (Public).
type Descriptor interface {
	// MethodName is the wire name.
	MethodName() string
	// NewParams returns a pointer to a zero P.
	NewParams() any
	// NewResult returns a pointer to a zero R.
	NewResult() any
}

// MethodName is the wire name.
func (m Method[P, R]) MethodName() string { return m.Name }

// NewParams returns a pointer to a zero P.
func (m Method[P, R]) NewParams() any { return new(P) }

// NewResult returns a pointer to a zero R.
func (m Method[P, R]) NewResult() any { return new(R) }

// Call makes the request on c and decodes its result. A wire error is
// returned as *Error.
func (m Method[P, R]) Call(ctx context.Context, c *Client, params P) (R, error) {
	var out R
	err := c.Call(ctx, m.Name, params, &out)
	return out, err
}

// Handle adapts a typed handler to the daemon's dispatch signature:
// params are decoded strictly (Decode) into P before f runs. P must be a
// struct type.
func (m Method[P, R]) Handle(f func(context.Context, Peer, P) (R, error)) func(context.Context, Peer, json.RawMessage) (any, error) {
	return func(ctx context.Context, peer Peer, raw json.RawMessage) (any, error) {
		var p P
		if err := Decode(raw, &p); err != nil {
			return nil, err
		}
		return f(ctx, peer, p)
	}
}

// The public v1 methods, one descriptor each. The result types are the
// daemon's: a Receipt for the two acceptances, a SessionResult for the
// controls, and so on (docs/rpc.md has the table). EventSubscribe's
// result is the stream's acknowledgement; the events follow on the
// connection, one per line.
var (
	SessionCreate     = Method[SessionCreateParams, Receipt]{MethodSessionCreate}
	SessionRestart    = Method[SessionRestartParams, SessionResult]{MethodSessionRestart}
	SessionSend       = Method[SessionSendParams, Receipt]{MethodSessionSend}
	SessionFetch      = Method[SessionFetchParams, FetchDocument]{MethodSessionFetch}
	SessionCancel     = Method[SessionCancelParams, SessionResult]{MethodSessionCancel}
	SessionList       = Method[SessionListParams, SessionListResult]{MethodSessionList}
	SessionRead       = Method[SessionReadParams, SessionReadResult]{MethodSessionRead}
	SessionStop       = Method[SessionStopParams, SessionResult]{MethodSessionStop}
	EventRead         = Method[EventReadParams, []Event]{MethodEventRead}
	EventSubscribe    = Method[EventReadParams, SubscribeAck]{MethodEventSubscribe}
	ScrollbackRead    = Method[ScrollbackReadParams, ScrollbackPage]{MethodScrollbackRead}
	TranscriptReadRaw = Method[TranscriptReadRawParams, RawPage]{MethodTranscriptReadRaw}
	ModelList         = Method[ModelListParams, ModelListResult]{MethodModelList}
	ProfileList       = Method[ProfileListParams, ProfileListResult]{MethodProfileList}
	HarnessList       = Method[HarnessListParams, HarnessListResult]{MethodHarnessList}
)

// Public is the v1 contract's method list, in the order the contract
// documents them. PublicMethods is derived from it.
var Public = []Descriptor{
	SessionCreate, SessionRestart, SessionSend, SessionFetch, SessionCancel,
	SessionList, SessionRead, SessionStop, EventRead, EventSubscribe,
	ScrollbackRead, TranscriptReadRaw, ModelList, ProfileList, HarnessList,
}

func descriptorNames(ds []Descriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.MethodName()
	}
	return out
}
