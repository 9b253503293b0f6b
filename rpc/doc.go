// Package rpc is dlgt's wire contract, RPC v1 (docs/rpc.md): the request
// and response envelopes and their strict parsing (wire.go), the typed
// errors and their codes (errors.go), the method names and the public
// allowlist (methods.go), a typed descriptor per public method that ties
// client and server to the same parameter and result types, and the
// forms a handler's answer may take (Reply: now, later, streamed)
// (method.go),
// every public parameter and result shape
// (types.go), the internal methods' descriptors and shapes (internal.go:
// hook, decision, daemon status and shutdown, terminal attach), the socket server's transport discipline (server.go:
// connection cap, line cap, rate limits, write timeouts, slow-client
// disconnect), a client (client.go) and the `dlgt rpc --stdio` proxy
// (proxy.go).
//
// # What it must not touch
//
// It knows nothing of Sessions, harnesses, the store or the CLI: it
// imports no other dlgt package, and every other package takes its wire
// shapes from here rather than declaring public fields of its own. The
// golden files under testdata pin the exact bytes of each shape.
package rpc
