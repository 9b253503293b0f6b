package rpc

// Internal methods' descriptors: served on the daemon socket for dlgt's
// own processes (the hook forwarder, attach, daemon control), never by
// the stdio proxy (they are not in Public; docs/rpc.md, "Internal
// methods"). They and their shapes live here beside the public ones, so
// the client and the daemon share them without the client importing the
// daemon.
var (
	HookMethod = Method[HookParams, HookAck]{Name: MethodHookDeliver}
	// HookDecisionMethod is internal.hook.decision (the hook socket serves it
	// besides internal.hook).
	HookDecisionMethod   = Method[HookDecisionParams, HookDecision]{Name: MethodHookDecision}
	DaemonStatusMethod   = Method[struct{}, DaemonStatus]{Name: MethodDaemonStatus}
	DaemonShutdownMethod = Method[struct{}, ShutdownResult]{Name: MethodDaemonShutdown}
	TerminalAttachMethod = Method[TerminalAttachParams, TerminalAttachAck]{Name: MethodTerminalAttach}
	TerminalInputMethod  = Method[TerminalInputParams, TerminalInputResult]{Name: MethodTerminalInput}
	TerminalResizeMethod = Method[TerminalResizeParams, TerminalResizeResult]{Name: MethodTerminalResize}
	TerminalDetachMethod = Method[TerminalDetachParams, TerminalDetachResult]{Name: MethodTerminalDetach}
)

// Internal lists the internal methods' descriptors.
var Internal = []Descriptor{
	HookMethod, HookDecisionMethod, DaemonStatusMethod, DaemonShutdownMethod,
	TerminalAttachMethod, TerminalInputMethod, TerminalResizeMethod, TerminalDetachMethod,
}

// HookAck is the result of internal.hook.
type HookAck struct {
	Accepted bool `json:"accepted"`
	// PendingID names the request this hook opened (the daemon's pending.go):
	// its forwarder waits for the answer with internal.hook.decision.
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
	Detached bool    `json:"detached"`
	Session  Session `json:"session"`
}

// Attach modes.
const (
	AttachWrite = "write"
	AttachRead  = "read"
)

// TerminalAttachParams are internal.terminal.attach's parameters. Rows and
// Cols, when given with mode write, size the harness PTY to the attaching
// terminal; the previous size is restored when the lease is released.
type TerminalAttachParams struct {
	Session string `json:"session"`
	Mode    string `json:"mode,omitempty"`
	Rows    int    `json:"rows,omitempty"`
	Cols    int    `json:"cols,omitempty"`
}

// TerminalAttachAck is the stream's initial response.
type TerminalAttachAck struct {
	SessionID string `json:"session_id"`
	Mode      string `json:"mode"`
	// Token authorizes input, resize and detach (write mode only).
	Token string `json:"token,omitempty"`
	State string `json:"state"`
	Rows  int    `json:"rows"`
	Cols  int    `json:"cols"`
	// RepaintBase64 clears the screen and draws the current live grid
	// (text only; the harness redraws itself right after).
	RepaintBase64 string `json:"repaint_base64"`
	// Offset is the raw-log offset the streamed output starts at.
	Offset int64 `json:"offset"`
}

// TerminalOutput is one streamed line: output bytes, or End when the
// stream finishes ("detached", "exited", "released").
type TerminalOutput struct {
	DataBase64 string `json:"data_base64,omitempty"`
	Offset     int64  `json:"offset,omitempty"`
	End        string `json:"end,omitempty"`
}

// TerminalInputParams are internal.terminal.input's parameters.
type TerminalInputParams struct {
	Session    string `json:"session"`
	Token      string `json:"token"`
	DataBase64 string `json:"data_base64"`
}

// TerminalResizeParams are internal.terminal.resize's parameters.
type TerminalResizeParams struct {
	Session string `json:"session"`
	Token   string `json:"token"`
	Rows    int    `json:"rows"`
	Cols    int    `json:"cols"`
}

// TerminalDetachParams are internal.terminal.detach's parameters.
type TerminalDetachParams struct {
	Session string `json:"session"`
	Token   string `json:"token"`
}

// DaemonStatus is the result of internal.daemon.status and of
// `dlgt daemon status`.
type DaemonStatus struct {
	Version     string `json:"version"`
	Commit      string `json:"commit"`
	PID         int    `json:"pid"`
	InstanceID  string `json:"instance_id"`
	Socket      string `json:"socket"`
	Home        string `json:"home"`
	UptimeMS    int64  `json:"uptime_ms"`
	Connections int    `json:"connections"`
	Sessions    int    `json:"sessions"`
	// SparesReady and SparesStarting count the warm spares (the daemon's spares.go),
	// and SparesRSSBytes is the resident memory of the ready ones'
	// process groups.
	SparesReady    int   `json:"spares_ready"`
	SparesStarting int   `json:"spares_starting"`
	SparesRSSBytes int64 `json:"spares_rss_bytes"`
	// What the creates that could have used a spare found, since the
	// daemon started (the daemon's spare statistics).
	SpareClaims      uint64 `json:"spare_claims"`
	SpareMisses      uint64 `json:"spare_misses"`
	SpareShapeMisses uint64 `json:"spare_shape_misses"`
}
