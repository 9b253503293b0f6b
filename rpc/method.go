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
		r, err := f(ctx, peer, p)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
}

// HandleReply is Handle for a handler whose answer is not always an R
// value at hand (Reply): a long poll, a stream, a result sent as stored.
func (m Method[P, R]) HandleReply(f func(context.Context, Peer, P) (Reply[R], error)) func(context.Context, Peer, json.RawMessage) (any, error) {
	return func(ctx context.Context, peer Peer, raw json.RawMessage) (any, error) {
		var p P
		if err := Decode(raw, &p); err != nil {
			return nil, err
		}
		r, err := f(ctx, peer, p)
		if err != nil {
			return nil, err
		}
		return r.v, nil
	}
}

// Reply is the answer of a method whose result is R, in one of the forms
// the server sends as an R: Value, Ref, Later, Streamed or Encoded. Only
// Later and Encoded are not checked by the compiler.
type Reply[R any] struct{ v any }

// Value answers with r.
func Value[R any](r R) Reply[R] { return Reply[R]{r} }

// Ref answers with *r (encoded as r is: no copy of a large result).
func Ref[R any](r *R) Reply[R] { return Reply[R]{r} }

// Later answers when d responds; d must respond with an R or a *R.
func Later[R any](d Deferred) Reply[R] { return Reply[R]{d} }

// Encoded answers with v, whose JSON encoding the handler vouches is an
// R's: a result made of stored, already encoded members, sent as stored.
func Encoded[R any](v any) Reply[R] { return Reply[R]{v} }

// AckStream is a Stream whose acknowledgement is an R.
type AckStream[R any] interface {
	Ack() R
	Run(ctx context.Context, emit func(line []byte) error) error
}

// Streamed answers with s's acknowledgement, then s's lines.
func Streamed[R any](s AckStream[R]) Reply[R] { return Reply[R]{ackStream[R]{s}} }

type ackStream[R any] struct{ s AckStream[R] }

func (a ackStream[R]) Ack() any { return a.s.Ack() }

func (a ackStream[R]) Run(ctx context.Context, emit func([]byte) error) error {
	return a.s.Run(ctx, emit)
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
	SessionDiff       = Method[SessionDiffParams, SessionDiffResult]{MethodSessionDiff}
	EventRead         = Method[EventReadParams, []Event]{MethodEventRead}
	EventSubscribe    = Method[EventReadParams, SubscribeAck]{MethodEventSubscribe}
	ScrollbackRead    = Method[ScrollbackReadParams, ScrollbackPage]{MethodScrollbackRead}
	TranscriptReadRaw = Method[TranscriptReadRawParams, RawPage]{MethodTranscriptReadRaw}
	ModelList         = Method[ModelListParams, ModelListResult]{MethodModelList}
	ProfileList       = Method[ProfileListParams, ProfileListResult]{MethodProfileList}
	HarnessList       = Method[HarnessListParams, HarnessListResult]{MethodHarnessList}
	SessionRespond    = Method[SessionRespondParams, SessionRespondResult]{MethodSessionRespond}
	SessionWarm       = Method[SessionWarmParams, SessionWarmResult]{MethodSessionWarm}
)

// Public is the v1 contract's method list, in the order the contract
// documents them. PublicMethods is derived from it.
var Public = []Descriptor{
	SessionCreate, SessionRestart, SessionSend, SessionFetch, SessionCancel,
	SessionList, SessionRead, SessionStop, EventRead, EventSubscribe,
	ScrollbackRead, TranscriptReadRaw, ModelList, ProfileList, HarnessList,
	SessionRespond,
	SessionDiff,
	SessionWarm,
}

func descriptorNames(ds []Descriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.MethodName()
	}
	return out
}
