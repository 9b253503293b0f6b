package rpc

// Method names of the public v1 surface. Only these pass through
// `dlgt rpc --stdio`.
const (
	MethodSessionCreate     = "session.create"
	MethodSessionRestart    = "session.restart"
	MethodSessionSend       = "session.send"
	MethodSessionFetch      = "session.fetch"
	MethodSessionCancel     = "session.cancel"
	MethodSessionList       = "session.list"
	MethodSessionRead       = "session.read"
	MethodSessionStop       = "session.stop"
	MethodEventRead         = "event.read"
	MethodEventSubscribe    = "event.subscribe"
	MethodScrollbackRead    = "scrollback.read"
	MethodTranscriptReadRaw = "transcript.read_raw"
	MethodModelList         = "model.list"
	MethodProfileList       = "profile.list"
	MethodHarnessList       = "harness.list"
	MethodSessionRespond    = "session.respond"
	MethodSessionDiff       = "session.diff"
	MethodSessionWarm       = "session.warm"
)

// Internal methods are served on the daemon socket for dlgt's own
// processes (the hook forwarder, attach, daemon control) and are never
// forwarded by the stdio proxy.
const (
	MethodHookDeliver    = "internal.hook"
	MethodDaemonStatus   = "internal.daemon.status"
	MethodDaemonShutdown = "internal.daemon.shutdown"
	MethodTerminalAttach = "internal.terminal.attach"
	MethodTerminalInput  = "internal.terminal.input"
	MethodTerminalResize = "internal.terminal.resize"
	MethodTerminalDetach = "internal.terminal.detach"
	MethodHookDecision   = "internal.hook.decision"
)

// PublicMethods is the fixed allowlist of the v1 contract, in the order the
// contract documents them: the names of Public (method.go).
var PublicMethods = descriptorNames(Public)

// IsPublic reports whether method is on the public allowlist.
func IsPublic(method string) bool {
	for _, m := range PublicMethods {
		if m == method {
			return true
		}
	}
	return false
}
