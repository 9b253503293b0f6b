// Package spares is the warm-spare pool: the room for "change how
// session.warm keeps harness processes ahead of a create".
//
// A Pool keeps, per launch shape (a key the daemon derives from
// everything a launch is made of), the number of spares a client asked
// for (Pool.Warm): it starts them, hands a ready one to a create of the
// same shape (Pool.Claim) and starts its replacement RefillDelay later,
// and stops them when their shape is idle for its idle time, when the
// daemon stops (Pool.Stop), or when a shape is warmed to fewer. It bounds
// them: MaxPerShape per shape, MaxTotal in all; a shape whose launches
// failed MaxFailures times in a row is not refilled until warmed again.
// A spare whose process exited unasked (Pool.Exited) is replaced. The
// counts a create found (claims, misses, shape misses) and what is held
// are Pool.Status's.
//
// The pool never sees the runtime, a Session or a process: a Launcher per
// shape makes a spare's object, launches it, says whether a ready one may
// still be handed out, and retires it. The daemon's launcher (spares.go
// in package daemon) is a Session object outside the daemon's Sessions.
// Its tests (pool_test.go) run a Pool with a fake launcher, no daemon.
//
// Locking: the pool's own mutex guards every shape; Launcher.Make runs
// under it (it must not call the pool), the other Launcher methods
// outside it.
package spares
