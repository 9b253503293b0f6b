// Package statedir is where dlgt keeps its state and which build it is:
// the daemon paths of a version (ResolvePaths: the state directory, the
// versioned socket and hook socket, the data directory and the log), the
// checks that make a state directory usable (CheckPrivateDir inspects,
// EnsurePrivateDir creates or tightens, StateDirError says what is wrong
// and the fix), and the release Version and build Commit that name the
// run and data directories.
//
// The daemon, the client and every front-end take these from here, so a
// program that only talks to a daemon links none of the daemon. It is a
// public leaf beside rpc, not internal: the client's exported API hands
// out its Paths and defaults to its Version, and programs outside this
// module resolve the same paths.
//
// # What it must not touch
//
// It imports no dlgt package but rpc (for the typed error of a relative
// DLGT_HOME or DLGT_SOCKET), and it creates nothing but what
// EnsurePrivateDir is asked to.
package statedir
