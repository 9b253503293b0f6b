// Package sockets is the daemon's Unix sockets: the room for "change how
// the daemon binds, keeps and gives back its socket paths".
//
// Listen binds a socket path with the bind hygiene of a careful local
// daemon: a stale socket left by a crash is replaced only when it is a
// socket, owned by this uid, and nothing answers on it (a live one is
// ErrInUse); the socket is made 0600 under a umask, never briefly wider.
// An Owned socket (ListenOwned) is bound again when its path is deleted
// or replaced while the daemon runs (Rebind, which Watch calls on an
// inotify event of the directories holding the paths, or every
// CheckInterval where it cannot watch them); the connections queued on
// the old socket are accepted first, and Cleanup removes the path only
// while it still names the socket bound.
//
// The package knows nothing of the daemon's RPC or state: the daemon
// (daemon.go) binds its two paths with it and serves on them. Its tests
// (sockets_test.go) bind sockets in a temporary directory, no daemon.
package sockets
