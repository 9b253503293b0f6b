package statedir

import (
	"fmt"
	"path/filepath"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Version is dlgt's release version; Commit is set at link time
// (-ldflags "-X github.com/dlgt-dev/dlgt/statedir.Commit=...").
var (
	Version = "0.1.0-dev"
	Commit  = "unknown"
)

// Paths are the filesystem locations of one daemon version.
type Paths struct {
	Home   string // $DLGT_HOME: everything dlgt keeps, mode 0700
	RunDir string // $DLGT_HOME/run/<version>, mode 0700
	Socket string // $DLGT_HOME/run/<version>/dlgt.sock unless DLGT_SOCKET
	// HookSocket is where injected harness hooks deliver callbacks:
	// Socket + ".hooks", beside it and as private.
	HookSocket string
	DataDir    string // $DLGT_HOME/data/<version>: this version's bbolt file and raw logs
	DB         string
	RawDir     string
	Log        string // where an auto-started daemon writes its log
}

// ResolvePaths computes the paths for version from the environment:
// DLGT_HOME, else $XDG_STATE_HOME/dlgt, else ~/.local/state/dlgt; and
// DLGT_SOCKET to pin the socket. It creates nothing.
//
// DLGT_HOME and DLGT_SOCKET must be absolute: a relative one would name
// another directory in every working directory (each with a daemon of
// its own), so it is INVALID_ARGUMENT. A relative XDG_STATE_HOME is
// ignored, as the XDG base directory specification says.
func ResolvePaths(getenv func(string) string, version string) (Paths, error) {
	for _, k := range []string{"DLGT_HOME", "DLGT_SOCKET"} {
		if v := getenv(k); v != "" && !filepath.IsAbs(v) {
			return Paths{}, &rpc.Error{Code: rpc.CodeInvalidArgument, Field: k, Message: fmt.Sprintf(
				"%s=%q is a relative path, which would name another directory (and another daemon) in every working directory: set it to an absolute path, e.g. %s=$PWD/%s",
				k, v, k, v)}
		}
	}
	home := getenv("DLGT_HOME")
	if home == "" {
		if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
			home = filepath.Join(x, "dlgt")
		} else {
			h := getenv("HOME")
			if h == "" {
				return Paths{}, &StateDirError{Dir: "(none)", Problem: "neither DLGT_HOME, XDG_STATE_HOME nor HOME is set", Fix: "set DLGT_HOME to a directory of your own"}
			}
			home = filepath.Join(h, ".local", "state", "dlgt")
		}
	}
	home, err := filepath.Abs(home)
	if err != nil {
		return Paths{}, err
	}
	p := Paths{
		Home:    home,
		RunDir:  filepath.Join(home, "run", version),
		DataDir: filepath.Join(home, "data", version),
	}
	p.Socket = filepath.Join(p.RunDir, "dlgt.sock")
	if s := getenv("DLGT_SOCKET"); s != "" {
		if p.Socket, err = filepath.Abs(s); err != nil {
			return Paths{}, err
		}
	}
	p.HookSocket = p.Socket + ".hooks"
	p.DB = filepath.Join(p.DataDir, "dlgt.db")
	p.RawDir = filepath.Join(p.DataDir, "raw")
	p.Log = filepath.Join(p.RunDir, "daemon.log")
	return p, nil
}
