// Package catalog is the harnesses a daemon has: the room for "change
// what harness.list or model.list answer, or how a harness is looked up
// by name".
//
// A Catalog holds the adapters by name (harness.All(), or a test's), the
// daemon's defaults for the harnesses' binary variables, and the
// installed versions (package versions). It answers harness.list (each
// harness's binary located in the caller's environment, else the
// daemon's, with its version) and model.list, and looks an adapter up
// for session.create and session.warm, refusing an unknown name with a
// typed error that lists the names it has.
//
// It sees no Session and no runtime. Its tests use stand-in adapters and
// scripts standing in for binaries, no daemon.
package catalog
