package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/progress"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// versionDaemon is an in-process fake daemon on one version's socket that
// holds a fixed set of Sessions.
type versionDaemon struct {
	holds map[string]bool
	mu    sync.Mutex
	calls []string // "method session"
}

func (d *versionDaemon) serve(ctx context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
	var p struct {
		Session string `json:"session"`
	}
	json.Unmarshal(req.Params, &p)
	d.mu.Lock()
	d.calls = append(d.calls, req.Method+" "+p.Session)
	d.mu.Unlock()
	if !d.holds[p.Session] {
		return nil, &rpc.Error{Code: rpc.CodeNotFound, Message: "no Session " + p.Session}
	}
	s := rpc.Session{ID: p.Session, Title: "t", Harness: "claude", Cwd: "/w", State: "idle"}
	switch req.Method {
	case rpc.MethodSessionRead:
		return rpc.SessionReadResult{Session: s}, nil
	case rpc.MethodSessionSend:
		return rpc.Receipt{Session: s, ExecutionSeq: 2, Cursor: "5", Submission: rpc.SubmissionConfirmed}, nil
	}
	return nil, rpc.Errorf(rpc.CodeInvalidArgument, "fake: %s", req.Method)
}

func (d *versionDaemon) methods() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

// twoVersions starts this version's daemon and an older version's, each
// on its versioned socket under one DLGT_HOME.
func twoVersions(t *testing.T, ours, theirs map[string]bool) (home string, mine, old *versionDaemon) {
	home = shortDir(t)
	mine, old = &versionDaemon{holds: ours}, &versionDaemon{holds: theirs}
	if ours != nil {
		serveAt(t, filepath.Join(home, "run", statedir.Version, "dlgt.sock"), mine.serve)
	}
	serveAt(t, filepath.Join(home, "run", "0.0.9", "dlgt.sock"), old.serve)
	return home, mine, old
}

func TestQualifiedIDReachesTheOwningVersionsDaemon(t *testing.T) {
	home, mine, old := twoVersions(t, map[string]bool{"claude:mine": true}, map[string]bool{"claude:old": true})
	e, out, _ := testEnv(t, map[string]string{"DLGT_HOME": home}, "")
	if code := run([]string{"session", "read", "claude:old"}, e); code != cli.ExitOK || !strings.Contains(out.String(), `"id":"claude:old"`) {
		t.Fatalf("read: exit %d %q", code, out)
	}
	e, out, _ = testEnv(t, map[string]string{"DLGT_HOME": home}, "")
	if code := run([]string{"session", "send", "claude:old", "--request-id", "r", "--", "hi"}, e); code != cli.ExitOK || !strings.Contains(out.String(), `"execution_seq":2`) {
		t.Fatalf("send: exit %d %q", code, out)
	}
	if got := strings.Join(old.methods(), ","); !strings.Contains(got, "session.send claude:old") {
		t.Fatalf("old daemon calls = %s", got)
	}
	for _, c := range mine.methods() {
		if c != "session.read claude:old" {
			t.Fatalf("this version's daemon served %q", c)
		}
	}
	// A Session this version holds stays here without asking anyone else.
	before := len(old.methods())
	e, out, _ = testEnv(t, map[string]string{"DLGT_HOME": home}, "")
	if code := run([]string{"session", "read", "claude:mine"}, e); code != cli.ExitOK {
		t.Fatalf("read mine: exit %d %q", code, out)
	}
	if len(old.methods()) != before {
		t.Fatal("the other daemon was asked about our own Session")
	}
	// Nobody holds it: this version's daemon answers NOT_FOUND.
	e, out, _ = testEnv(t, map[string]string{"DLGT_HOME": home}, "")
	if code := run([]string{"session", "read", "claude:nobody"}, e); code != cli.ExitError || !strings.Contains(out.String(), "NOT_FOUND") {
		t.Fatalf("read nobody: exit %d %q", code, out)
	}
}

func TestQualifiedIDFoundWhenThisVersionIsNotRunning(t *testing.T) {
	home, _, old := twoVersions(t, nil, map[string]bool{"claude:old": true})
	e, out, _ := testEnv(t, map[string]string{"DLGT_HOME": home}, "")
	if code := run([]string{"session", "read", "claude:old"}, e); code != cli.ExitOK {
		t.Fatalf("exit %d %q", code, out)
	}
	if len(old.methods()) != 2 { // the probe, then the command
		t.Fatalf("old daemon calls = %v", old.methods())
	}
}

func TestAliasesAndPinnedSocketsAreNotRouted(t *testing.T) {
	home, mine, old := twoVersions(t, map[string]bool{}, map[string]bool{"review": true, "claude:old": true})
	e, out, _ := testEnv(t, map[string]string{"DLGT_HOME": home}, "")
	if code := run([]string{"session", "read", "review"}, e); code != cli.ExitError || !strings.Contains(out.String(), "NOT_FOUND") {
		t.Fatalf("alias: exit %d %q", code, out)
	}
	pinned := filepath.Join(home, "run", statedir.Version, "dlgt.sock")
	e, out, _ = testEnv(t, map[string]string{"DLGT_HOME": home, "DLGT_SOCKET": pinned}, "")
	if code := run([]string{"session", "read", "claude:old"}, e); code != cli.ExitError || !strings.Contains(out.String(), "NOT_FOUND") {
		t.Fatalf("pinned: exit %d %q", code, out)
	}
	if n := len(old.methods()); n != 0 {
		t.Fatalf("the other daemon was asked %d times", n)
	}
	if n := len(mine.methods()); n != 2 {
		t.Fatalf("this daemon calls = %v", mine.methods())
	}
}

// slowFetchDaemon answers session.fetch after a delay and reports a busy
// Session to the indicator's polls.
func slowFetchDaemon(t *testing.T, delay time.Duration) string {
	sock := filepath.Join(shortDir(t), "s")
	serveAt(t, sock, func(ctx context.Context, _ rpc.Peer, req *rpc.Request) (any, error) {
		switch req.Method {
		case rpc.MethodSessionFetch:
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
			return rpc.FetchDocument{SchemaVersion: 1, Reason: rpc.ReasonTimeout, Cursor: "9", Gaps: []rpc.Gap{}, Sessions: []rpc.FetchSession{}}, nil
		case rpc.MethodSessionRead:
			return rpc.SessionReadResult{Session: rpc.Session{ID: "claude:x", State: rpc.StateBusy}}, nil
		case rpc.MethodScrollbackRead:
			return map[string]any{"lines": []string{"", "✻ Thinking about\tit…", "", ""}}, nil
		}
		return nil, rpc.Errorf(rpc.CodeInvalidArgument, "no %s", req.Method)
	})
	return sock
}

func TestFetchWaitProgressOnTerminalStderr(t *testing.T) {
	old := progress.Every
	progress.Every = 50 * time.Millisecond
	defer func() { progress.Every = old }()
	sock := slowFetchDaemon(t, 400*time.Millisecond)
	e, out, errb := testEnv(t, map[string]string{"DLGT_SOCKET": sock}, "")
	var tty bytes.Buffer
	e.Stderr = &tty
	e.IsTerminal = func(f any) bool { return f == e.Stderr }
	if code := run([]string{"session", "fetch", "claude:x", "--wait", "1m"}, e); code != cli.ExitOK {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	oneJSONLine(t, out.String())
	got := tty.String()
	if !strings.Contains(got, "\r\x1b[2Kwaiting · claude:x · busy · 0:00/1:00 · ✻ Thinking about it…") {
		t.Fatalf("indicator = %q", got)
	}
	if !strings.HasSuffix(got, "\r\x1b[2K") {
		t.Fatalf("indicator line not cleared at the end: %q", got)
	}
	_ = errb
}

func TestFetchWaitNoProgressWithoutTerminal(t *testing.T) {
	old := progress.Every
	progress.Every = 50 * time.Millisecond
	defer func() { progress.Every = old }()
	sock := slowFetchDaemon(t, 300*time.Millisecond)
	e, out, errb := testEnv(t, map[string]string{"DLGT_SOCKET": sock}, "")
	if code := run([]string{"session", "fetch", "claude:x", "--wait", "1m"}, e); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	oneJSONLine(t, out.String())
	if errb.Len() != 0 {
		t.Fatalf("stderr = %q", errb)
	}
}
