// Package parking is where long polls wait for a change: the room for
// "change how parked session.fetch long polls share their evaluation".
//
// A Lot holds waiters by scope and key; the waiters of one key share one
// evaluation, made by one goroutine once the key's change comes and
// handed to each of them; the last waiter leaving before the change
// abandons it (nothing evaluates), and a waiter parking after the change
// gets an evaluation of its own at once. AllShares is the same for
// all:true long polls woken by one change: one evaluation per position
// and max_bytes, its documents sealed once per reason and cursor, at most
// AllMax per change, an older change's dropped.
//
// The package never sees a Session or a long poll's rules: the daemon
// (fetch_park.go, fetch_longpoll.go, fetch_all.go) keys them, evaluates
// and answers. Its tests run a Lot with plain values, no daemon.
package parking
