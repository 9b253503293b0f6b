// Package toolcalls is the tool call log: the room for "change how the
// tool.call events a harness's tool hooks report are kept and merged".
//
// A Log keeps each call a harness reports (harness.ToolCall) as a
// tool.call event, in memory and bounded (LogCap events, LogBytes
// bytes; a reader behind the evicted ones is told). A call's input and
// output are kept as compact JSON up to rpc.MaxToolRaw bytes, else as a
// truncated JSON string, flagged. A harness that gives no call id (Gemini
// CLI) gets one minted at the call's start and found again at its end
// (the oldest open call of that name, the same input first), with the
// open calls bounded per Session and in Sessions. Merge interleaves a
// page of lifecycle events with the calls in recording order. The log is
// not stored: a daemon restart forgets it. A Turn folds one execution's
// calls into their last status, bounded (rpc.MaxResultToolCalls, inputs
// rpc.MaxResultToolInput), for its result, which the daemon stores.
//
// The package never sees a Session: the daemon (toolevents.go) decides
// which hook's call is recorded, under which lifecycle seq, and serves
// event.read and event.subscribe over it. Its tests need no daemon.
package toolcalls
