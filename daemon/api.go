package daemon

// The wire layer: the dispatch table from method names to handlers.
// Each method is served through its descriptor (rpc.Method), which
// decodes the params strictly into the descriptor's P (unknown, duplicate,
// mistyped and missing required fields are INVALID_ARGUMENT before any
// domain code runs) and takes the domain function's R: a client and the
// daemon disagreeing on a method's types is a compile error. The domain
// functions (sessionCreate, sessionFetch, ...) take typed params and
// never see the request's bytes, except an acceptance's idempotency
// identity, which is computed from them (acceptanceParams).

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Internal methods' descriptors: served on the daemon socket for dlgt's
// own processes (the hook forwarder, attach, daemon control), never by
// the stdio proxy (they are not in rpc.Public).
var (
	HookMethod           = rpc.Method[rpc.HookParams, HookAck]{Name: rpc.MethodHookDeliver}
	DaemonStatusMethod   = rpc.Method[struct{}, DaemonStatus]{Name: rpc.MethodDaemonStatus}
	DaemonShutdownMethod = rpc.Method[struct{}, ShutdownResult]{Name: rpc.MethodDaemonShutdown}
	TerminalAttachMethod = rpc.Method[TerminalAttachParams, TerminalAttachAck]{Name: rpc.MethodTerminalAttach}
	TerminalInputMethod  = rpc.Method[TerminalInputParams, TerminalInputResult]{Name: rpc.MethodTerminalInput}
	TerminalResizeMethod = rpc.Method[TerminalResizeParams, TerminalResizeResult]{Name: rpc.MethodTerminalResize}
	TerminalDetachMethod = rpc.Method[TerminalDetachParams, TerminalDetachResult]{Name: rpc.MethodTerminalDetach}
)

// Internal lists the internal methods' descriptors.
var Internal = []rpc.Descriptor{
	HookMethod, HookDecisionMethod, DaemonStatusMethod, DaemonShutdownMethod,
	TerminalAttachMethod, TerminalInputMethod, TerminalResizeMethod, TerminalDetachMethod,
}

// HookAck is the result of internal.hook.
type HookAck struct {
	Accepted bool `json:"accepted"`
	// PendingID names the request this hook opened (pending.go): its
	// forwarder waits for the answer with internal.hook.decision.
	PendingID string `json:"pending_id,omitempty"`
}

// ShutdownResult is the result of internal.daemon.shutdown.
type ShutdownResult struct {
	Stopping bool `json:"stopping"`
}

// TerminalInputResult is the result of internal.terminal.input.
type TerminalInputResult struct {
	Written int `json:"written"`
}

// TerminalResizeResult is the result of internal.terminal.resize.
type TerminalResizeResult struct {
	Rows int `json:"rows"`
	Cols int `json:"cols"`
}

// TerminalDetachResult is the result of internal.terminal.detach.
type TerminalDetachResult struct {
	Detached bool        `json:"detached"`
	Session  rpc.Session `json:"session"`
}

// method serves one method's raw params.
type method = func(ctx context.Context, peer rpc.Peer, params json.RawMessage) (any, error)

type route struct {
	name string
	m    method
}

// serve routes m to f.
func serve[P, R any](m rpc.Method[P, R], f func(context.Context, rpc.Peer, P) (R, error)) route {
	return route{m.Name, m.Handle(f)}
}

// serveReply routes m to f, whose answer may come later or as a stream.
func serveReply[P, R any](m rpc.Method[P, R], f func(context.Context, rpc.Peer, P) (rpc.Reply[R], error)) route {
	return route{m.Name, m.HandleReply(f)}
}

// serveAcceptance routes m to f and hands f the request's params as
// sent (acceptanceParams): an acceptance's payload identity is computed
// from them (payloadDigest), so that a retry is recognised after any
// daemon restart however the params decode.
func serveAcceptance[P any](m rpc.Method[P, rpc.Receipt], f func(context.Context, rpc.Peer, P) (rpc.Receipt, error)) route {
	h := m.Handle(f)
	return route{m.Name, func(ctx context.Context, peer rpc.Peer, params json.RawMessage) (any, error) {
		return h(context.WithValue(ctx, acceptanceParamsKey{}, params), peer, params)
	}}
}

type acceptanceParamsKey struct{}

// acceptanceParams are the params of the acceptance ctx serves, as sent.
func acceptanceParams(ctx context.Context) json.RawMessage {
	raw, _ := ctx.Value(acceptanceParamsKey{}).(json.RawMessage)
	return raw
}

// routes lists every method the daemon serves: each public descriptor
// (rpc.Public) and each internal one (Internal), once.
func (rt *runtime) routes() []route {
	return []route{
		serveAcceptance(rpc.SessionCreate, rt.sessionCreate),
		serve(rpc.SessionRestart, rt.sessionRestart),
		serveAcceptance(rpc.SessionSend, rt.sessionSend),
		serveReply(rpc.SessionFetch, rt.sessionFetch),
		serve(rpc.SessionCancel, rt.sessionCancel),
		serve(rpc.SessionList, rt.sessionList),
		serve(rpc.SessionRead, rt.sessionRead),
		serve(rpc.SessionStop, rt.sessionStop),
		serveReply(rpc.EventRead, rt.eventRead),
		serveReply(rpc.EventSubscribe, rt.eventSubscribe),
		serve(rpc.ScrollbackRead, rt.scrollbackRead),
		serve(rpc.TranscriptReadRaw, rt.transcriptReadRaw),
		serve(rpc.ModelList, rt.modelList),
		serve(rpc.ProfileList, profileList),
		serve(rpc.HarnessList, rt.harnessList),
		serve(rpc.SessionRespond, rt.sessionRespond),
		serve(rpc.SessionDiff, rt.sessionDiff),
		serve(rpc.SessionWarm, rt.sessionWarm),

		serve(HookMethod, rt.hookDeliver),
		serve(HookDecisionMethod, rt.hookDecision),
		serve(DaemonStatusMethod, rt.daemonStatus),
		serve(DaemonShutdownMethod, rt.daemonShutdown),
		serveReply(TerminalAttachMethod, rt.terminalAttach),
		serve(TerminalInputMethod, rt.terminalInput),
		serve(TerminalResizeMethod, rt.terminalResize),
		serve(TerminalDetachMethod, rt.terminalDetach),
	}
}

// methods is the dispatch table, built once in newRuntime (each entry is
// a closure over a method value: building the table per request was a
// measurable part of a cheap request's cost).
func (rt *runtime) methods() map[string]method {
	rs := rt.routes()
	out := make(map[string]method, len(rs))
	for _, r := range rs {
		if _, dup := out[r.name]; dup {
			panic("daemon: " + r.name + " is routed twice")
		}
		out[r.name] = r.m
	}
	return out
}

// ServeRPC dispatches one request. Unknown methods are INVALID_ARGUMENT.
func (rt *runtime) ServeRPC(ctx context.Context, peer rpc.Peer, req *rpc.Request) (any, error) {
	m, ok := rt.methodOf[req.Method]
	if !ok {
		return nil, rpc.InvalidField("method", "unknown method %q", clipRef(req.Method))
	}
	rt.log.Debug("rpc", "method", req.Method, "peer_uid", peer.UID, "peer_pid", peer.PID)
	res, err := m(ctx, peer, req.Params)
	if err != nil {
		var re *rpc.Error
		if !errors.As(err, &re) {
			rt.log.Error("internal error", "method", req.Method, "err", err)
		}
	}
	return res, err
}
