package store

import (
	"errors"
	"strings"
	"syscall"
)

var (
	// ErrLocked is returned when Open cannot take the exclusive lock on the
	// state file within Options.LockTimeout because another process (normally
	// another dlgt daemon) has it open.
	ErrLocked = errors.New("store: another dlgt daemon is using the state directory")

	// ErrSchemaTooNew is returned when Open finds a schema version newer than
	// this build understands (the file was written by a newer dlgt).
	ErrSchemaTooNew = errors.New("store: state file was written by a newer dlgt (schema version too new)")

	// ErrNotFound is returned when a looked-up session or receipt does not exist.
	ErrNotFound = errors.New("store: not found")

	// ErrClosed is returned when a method is called after Close.
	ErrClosed = errors.New("store: database is closed")

	// ErrDeleted is returned when a RowLog is used after DeleteSession removed
	// its session.
	ErrDeleted = errors.New("store: session was deleted")

	// ErrInvalidName is returned when a uid, request id or other key is empty,
	// too long, or (for raw logs) not safe to use in a file name.
	ErrInvalidName = errors.New("store: invalid name")
)

// DiskCause names the environmental cause of a store failure err, if it
// is one (the state directory full, over quota, read-only, failing), as
// a phrase completing "the state directory ...": by the errno when it
// survived wrapping, else by its text (bbolt formats some file errors
// with %s).
func DiskCause(err error) string {
	for _, c := range []struct {
		errno syscall.Errno
		what  string
	}{
		{syscall.ENOSPC, "is full (no space left on device)"},
		{syscall.EDQUOT, "is over its disk quota"},
		{syscall.EFBIG, "hit the file size limit"},
		{syscall.EROFS, "is read-only"},
		{syscall.EIO, "has an I/O error"},
	} {
		if errors.Is(err, c.errno) || strings.Contains(err.Error(), c.errno.Error()) {
			return c.what
		}
	}
	return ""
}
