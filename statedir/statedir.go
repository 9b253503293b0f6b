package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// StateDirError is a state directory dlgt cannot use: which one, what is
// wrong with it, and the fix that is right for that path. The client, the
// daemon and doctor report the same text.
type StateDirError struct {
	Dir     string
	Problem string
	Fix     string
}

func (e *StateDirError) Error() string {
	return fmt.Sprintf("state directory %s: %s; fix: %s", e.Dir, e.Problem, e.Fix)
}

// StateDirState is what CheckPrivateDir found.
type StateDirState int

const (
	DirMissing StateDirState = iota // does not exist yet: created with mode 0700
	DirPrivate                      // a directory of ours with mode 0700
	DirLoose                        // ours, but group or others have access: tightened to 0700 on start
)

// CheckPrivateDir inspects dir without changing anything. An error means
// no daemon can use it (not a directory, another user's, unreadable, or
// impossible to create); a loose mode is not an error, the daemon tightens
// it, and says so.
func CheckPrivateDir(dir string) (StateDirState, os.FileMode, error) {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		if perr := creatable(dir); perr != nil {
			return DirMissing, 0, perr
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return DirMissing, 0, &StateDirError{Dir: dir, Problem: "cannot be created: " + errText(err), Fix: "set DLGT_HOME to a directory you can write"}
		}
		return DirMissing, 0, nil
	case err != nil:
		return 0, 0, &StateDirError{Dir: dir, Problem: "cannot be inspected: " + errText(err),
			Fix: "make " + filepath.Dir(dir) + " searchable by you, or set DLGT_HOME to a directory of your own"}
	case !fi.IsDir():
		what := "is not a directory"
		if fi.Mode()&fs.ModeSymlink != 0 {
			what = "is a symbolic link, not a directory"
		}
		return 0, 0, &StateDirError{Dir: dir, Problem: what, Fix: "move " + dir + " away, or set DLGT_HOME elsewhere"}
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != os.Getuid() {
		return 0, 0, &StateDirError{Dir: dir, Problem: fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, os.Getuid()),
			Fix: fmt.Sprintf("sudo chown -R %d %s, or set DLGT_HOME to a directory of your own", os.Getuid(), dir)}
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		return DirLoose, mode, nil
	}
	return DirPrivate, fi.Mode().Perm(), nil
}

// creatable reports why dir (missing) could not be created: its nearest
// existing ancestor is not a directory, or not writable by this user.
func creatable(dir string) error {
	parent := filepath.Dir(dir)
	for parent != dir {
		fi, err := os.Stat(parent)
		if errors.Is(err, fs.ErrNotExist) {
			dir, parent = parent, filepath.Dir(parent)
			continue
		}
		if err != nil {
			return &StateDirError{Dir: dir, Problem: "cannot be created: " + errText(err),
				Fix: "set DLGT_HOME to a directory you can write"}
		}
		if !fi.IsDir() {
			return &StateDirError{Dir: dir, Problem: "cannot be created: " + parent + " is not a directory",
				Fix: "set DLGT_HOME to a path under a directory you can write"}
		}
		if syscall.Access(parent, 0x2|0x1) != nil { // W_OK|X_OK
			return &StateDirError{Dir: dir, Problem: "cannot be created: " + parent + " is not writable by you",
				Fix: "mkdir -m 700 " + dir + " as its owner, or set DLGT_HOME to a directory you can write"}
		}
		return nil
	}
	return nil
}

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// EnsurePrivateDir creates dir (and missing parents) with mode 0700 and
// insists that it is a directory owned by this user. A loose mode on a
// directory of ours is tightened to 0700, and reported as tightened.
func EnsurePrivateDir(dir string) (tightened os.FileMode, err error) {
	state, mode, err := CheckPrivateDir(dir)
	if err != nil {
		return 0, err
	}
	switch state {
	case DirMissing:
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return 0, &StateDirError{Dir: dir, Problem: "cannot be created: " + errText(err), Fix: "set DLGT_HOME to a directory you can write"}
		}
		// Created by someone else in between, or through a symlink: check again.
		if _, _, err := CheckPrivateDir(dir); err != nil {
			return 0, err
		}
	case DirLoose:
		if err := os.Chmod(dir, 0o700); err != nil {
			return 0, &StateDirError{Dir: dir, Problem: fmt.Sprintf("has mode %04o and cannot be tightened: %s", mode, errText(err)), Fix: "chmod 700 " + dir}
		}
		return mode, nil
	}
	return 0, nil
}
