// Package hookhttp is the HTTP hook intake (DLGT_HOOKS=http): the room
// for "change how a harness posts its hooks to the daemon over HTTP".
//
// A Server listens on an ephemeral port of 127.0.0.1. A connection from
// a socket another user owns is closed at accept (peeruid.go reads the
// peer's uid from /proc/net/tcp); at most a bounded number of connections
// are open at once, the rest waiting in the kernel's backlog. Each
// request is POST /hook/{launch}/{event} with the hook's JSON and a
// bearer token, HMAC-SHA256 of its launch id under a key drawn at Listen
// (ForLaunch gives a launch its URL and token, which reach the harness
// only through its environment). A request without the launch's token, a
// browser origin, a body over hookfwd.MaxPayload or not JSON is refused
// with its status and delivers nothing; refusals are logged at most once
// a second.
//
// The package never sees a Session: the daemon hands it the function that
// applies a hook (its internal.hook), as the command hooks' forwarder
// reaches the same function over the hook socket. Its tests run a Server
// with a fake deliver function, no daemon.
package hookhttp
