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
// (rpc.Public) and each internal one (rpc.Internal), once.
func (rt *runtime) routes() []route {
	return []route{
		serveAcceptance(rpc.SessionCreate, rt.sessionCreate),
		serve(rpc.SessionRestart, rt.sessionRestart),
		serveAcceptance(rpc.SessionSend, rt.sessionSend),
		serveReply(rpc.SessionFetch, rt.fetch.sessionFetch),
		serve(rpc.SessionCancel, rt.sessionCancel),
		serve(rpc.SessionList, rt.sessionList),
		serve(rpc.SessionRead, rt.sessionRead),
		serve(rpc.SessionStop, rt.sessionStop),
		serveReply(rpc.EventRead, rt.eventRead),
		serveReply(rpc.EventSubscribe, rt.eventSubscribe),
		serve(rpc.ScrollbackRead, rt.scrollbackRead),
		serve(rpc.TranscriptReadRaw, rt.transcriptReadRaw),
		serve(rpc.ModelList, rt.catalog.Models),
		serve(rpc.ProfileList, profileList),
		serve(rpc.HarnessList, rt.catalog.List),
		serve(rpc.SessionRespond, rt.sessionRespond),
		serve(rpc.SessionDiff, rt.worktrees.sessionDiff),
		serve(rpc.SessionWarm, rt.sessionWarm),

		serve(rpc.HookMethod, rt.hooks.hookDeliver),
		serve(rpc.HookDecisionMethod, rt.hookDecision),
		serve(rpc.DaemonStatusMethod, rt.daemonStatus),
		serve(rpc.DaemonShutdownMethod, rt.daemonShutdown),
		serveReply(rpc.TerminalAttachMethod, rt.terminals.terminalAttach),
		serve(rpc.TerminalInputMethod, rt.terminals.terminalInput),
		serve(rpc.TerminalResizeMethod, rt.terminals.terminalResize),
		serve(rpc.TerminalDetachMethod, rt.terminals.terminalDetach),
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
