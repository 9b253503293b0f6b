package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Every way a command line can be wrong answers alike: one JSON failure
// line on stdout with its code, the exit status of that code, and (for a
// usage error) the command's usage on stderr.
func TestCLIErrorShapes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		code  rpc.Code
		usage string // a line the usage on stderr must hold; "" = no usage
	}{
		{"unknown command", []string{"bogus"}, rpc.CodeInvalidArgument, "dlgt [command]"},
		{"unknown root flag", []string{"--bogus"}, rpc.CodeInvalidArgument, "dlgt [command]"},
		{"unknown shorthand", []string{"-Z"}, rpc.CodeInvalidArgument, "dlgt [command]"},
		{"unknown session command", []string{"session", "bogus"}, rpc.CodeInvalidArgument, "dlgt session [command]"},
		{"unknown daemon command", []string{"daemon", "bogus"}, rpc.CodeInvalidArgument, "dlgt daemon [command]"},
		{"unknown events flag", []string{"events", "--bogus"}, rpc.CodeInvalidArgument, "dlgt events"},
		{"unknown fetch flag", []string{"session", "fetch", "x", "--bogus"}, rpc.CodeInvalidArgument, "dlgt session fetch"},
		{"unknown transcript flag", []string{"transcript", "x", "--bogus"}, rpc.CodeInvalidArgument, "dlgt transcript"},
		{"unknown doctor flag", []string{"doctor", "--bogus"}, rpc.CodeInvalidArgument, "dlgt doctor"},
		{"bad flag value", []string{"session", "fetch", "x", "--wait", "soon"}, rpc.CodeInvalidArgument, "dlgt session fetch"},
		{"missing argument", []string{"session", "read"}, rpc.CodeInvalidArgument, "dlgt session read SESSION"},
		{"extra argument", []string{"session", "stop", "a", "b"}, rpc.CodeInvalidArgument, "dlgt session stop"},
		{"argument to version", []string{"version", "extra"}, rpc.CodeInvalidArgument, "dlgt version"},
		{"argument to events", []string{"events", "extra"}, rpc.CodeInvalidArgument, "dlgt events"},
		{"unknown shell", []string{"completion", "tcsh"}, rpc.CodeInvalidArgument, "dlgt completion"},
		{"unknown help topic", []string{"help", "bogus"}, rpc.CodeInvalidArgument, "dlgt help"},
		// Usage errors a command finds itself, after cobra parsed the
		// line, print the usage too.
		{"bad --until", []string{"session", "fetch", "x", "--until", "foo"}, rpc.CodeInvalidArgument, "dlgt session fetch"},
		{"bad --output", []string{"session", "list", "-o", "yaml"}, rpc.CodeInvalidArgument, "dlgt session list"},
		{"bad --output, read", []string{"session", "read", "x", "-o", "yaml"}, rpc.CodeInvalidArgument, "dlgt session read SESSION"},
		{"missing prompt", []string{"session", "send", "x", "--request-id", "r1"}, rpc.CodeInvalidArgument, "dlgt session send SESSION"},
		{"prompt both ways", []string{"session", "send", "x", "--request-id", "r1", "--stdin", "--", "hi"}, rpc.CodeInvalidArgument, "dlgt session send SESSION"},
		{"bad --screen", []string{"session", "fetch", "x", "--screen", "maybe"}, rpc.CodeInvalidArgument, "dlgt session fetch"},
		{"negative --lines", []string{"scrollback", "x", "--lines", "-1"}, rpc.CodeInvalidArgument, "dlgt scrollback"},
		// An INVALID_ARGUMENT that is no fault of the command line does not.
		{"attach without a terminal", []string{"session", "attach", "x"}, rpc.CodeInvalidArgument, ""},
		{"daemon down", []string{"session", "list"}, rpc.CodeRPCUnavailable, ""},
		{"daemon down, events", []string{"events"}, rpc.CodeRPCUnavailable, ""},
		{"daemon down, read", []string{"session", "read", "review"}, rpc.CodeRPCUnavailable, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errb := testEnv(t, nil, "")
			code, stdout := runCLI(t, e, out, tc.args...)
			if code != cli.ExitError {
				t.Fatalf("exit %d, want %d (stdout %q)", code, cli.ExitError, stdout)
			}
			var m struct {
				OK    *bool      `json:"ok"`
				Error *rpc.Error `json:"error"`
			}
			line := oneJSONLine(t, stdout)
			b, _ := json.Marshal(line)
			if json.Unmarshal(b, &m) != nil || m.OK == nil || *m.OK || m.Error == nil || m.Error.Code != tc.code || m.Error.Message == "" {
				t.Fatalf("stdout %q, want ok:false with %s", stdout, tc.code)
			}
			hasUsage := strings.Contains(errb.String(), "Usage:")
			if tc.usage != "" && (!hasUsage || !strings.Contains(errb.String(), tc.usage)) {
				t.Fatalf("stderr %q lacks the usage %q", errb, tc.usage)
			}
			if tc.usage == "" && hasUsage {
				t.Fatalf("a failure that is no usage error printed the usage: %q", errb)
			}
		})
	}
}

// rpc --stdio keeps stdout for the protocol: its usage errors go to stderr.
func TestCLIRPCUsageErrorOnStderr(t *testing.T) {
	for _, args := range [][]string{{"rpc"}, {"rpc", "--stdio", "--bogus"}} {
		e, out, errb := testEnv(t, nil, "")
		code, stdout := runCLI(t, e, out, args...)
		if code != cli.ExitError || stdout != "" || !strings.HasPrefix(errb.String(), `{"ok":false,"error":{"code":"INVALID_ARGUMENT"`) || !strings.Contains(errb.String(), "Usage:") {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, errb)
		}
	}
}

func TestCLIVersionFlag(t *testing.T) {
	e, out, errb := testEnv(t, nil, "")
	code, stdout := runCLI(t, e, out, "--version")
	e2, out2, _ := testEnv(t, nil, "")
	_, want := runCLI(t, e2, out2, "version")
	if code != cli.ExitOK || stdout != want || errb.Len() != 0 {
		t.Fatalf("--version: exit %d, stdout %q (want %q), stderr %q", code, stdout, want, errb)
	}
}

// Ctrl-C (or SIGTERM) during a waiting command ends it as the shell
// expects: 128+signal, nothing on stdout.
func TestCLIInterruptDuringWait(t *testing.T) {
	for _, tc := range []struct {
		sig  os.Signal
		code int
		args []string
	}{
		{os.Interrupt, 130, []string{"session", "fetch", "review", "--wait", "10m"}},
		{syscall.SIGTERM, 143, []string{"session", "fetch", "review", "--wait", "10m", "--until", "result"}},
		{os.Interrupt, 130, []string{"session", "cancel", "review"}},
		{os.Interrupt, 130, []string{"events", "--follow"}},
	} {
		d := testkit.NewFakeDaemon(t)
		d.Set(rpc.MethodSessionFetch, testkit.BlockUntilClosed{})
		d.Set(rpc.MethodSessionCancel, testkit.BlockUntilClosed{})
		d.Set(rpc.MethodEventSubscribe, testkit.BlockUntilClosed{})
		e, out, errb := cliEnv(t, d, nil, nil, "")
		e.Signals = make(chan os.Signal, 1)
		done := make(chan int, 1)
		go func() { done <- run(tc.args, e) }()
		for deadline := time.Now().Add(30 * time.Second); d.Count() == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%v: the request never reached the daemon", tc.args)
			}
		}
		e.Signals <- tc.sig
		select {
		case code := <-done:
			if code != tc.code || out.Len() != 0 {
				t.Fatalf("%v after %v: exit %d (want %d), stdout %q, stderr %q", tc.args, tc.sig, code, tc.code, out, errb)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%v: still running after %v", tc.args, tc.sig)
		}
	}
}

func TestRootHelpExitStatusesOnce(t *testing.T) {
	e, out, _ := testEnv(t, nil, "")
	if code, stdout := runCLI(t, e, out, "--help"); code != cli.ExitOK || strings.Count(stdout, "SESSION_BUSY") != 1 || !strings.Contains(stdout, "130") {
		t.Fatalf("exit %d, root help lists the exit statuses %d times:\n%s", code, strings.Count(stdout, "SESSION_BUSY"), stdout)
	}
}

// An unusable state directory is RPC_UNAVAILABLE naming the directory, the
// problem and a fix right for that path; nothing is changed. A loose mode
// on our own directory is tightened, and the client says so.
func TestCLIStateDirErrors(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/afile"
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, home, want string }{
		{"a file", file, "move " + file + " away"},
		{"under a file", file + "/sub", file + " is not a directory"},
	}
	if os.Getuid() == 0 {
		other := dir + "/other"
		os.Mkdir(other, 0o700)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct{ name, home, want string }{"another user's", other, "sudo chown -R 0 " + other})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"DLGT_HOME": tc.home}
			e, out, errb := testEnv(t, vars, "")
			vars["DLGT_NO_AUTOSTART"] = "0"
			code, stdout := runCLI(t, e, out, "session", "list")
			m := oneJSONLine(t, stdout)
			er, _ := m["error"].(map[string]any)
			msg, _ := er["message"].(string)
			if code != cli.ExitError || er["code"] != string(rpc.CodeRPCUnavailable) || !strings.Contains(msg, tc.home) || !strings.Contains(msg, tc.want) || strings.Contains(errb.String(), "Usage:") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want RPC_UNAVAILABLE naming %q", code, stdout, errb, tc.want)
			}
		})
	}
	if data, err := os.ReadFile(file); err != nil || string(data) != "x" {
		t.Fatalf("the file used as DLGT_HOME changed: %q %v", data, err)
	}
	loose := dir + "/loose"
	os.Mkdir(loose, 0o700)
	os.Chmod(loose, 0o755)
	vars := map[string]string{"DLGT_HOME": loose}
	e, out, errb := testEnv(t, vars, "")
	vars["DLGT_NO_AUTOSTART"] = "false"
	code, stdout := runCLI(t, e, out, "session", "list") // e.exe is empty: no daemon starts
	fi, _ := os.Stat(loose)
	if code != cli.ExitError || !strings.Contains(stdout, "RPC_UNAVAILABLE") || !strings.Contains(errb.String(), "tightened "+loose+" from mode 0755 to 0700") || fi.Mode().Perm() != 0o700 {
		t.Fatalf("loose home: exit %d, stdout %q, stderr %q, mode %v", code, stdout, errb, fi.Mode())
	}
}

// DLGT_NO_AUTOSTART is a boolean: 0/false start a daemon, a value that is
// no boolean is INVALID_ARGUMENT.
func TestCLINoAutostartIsBoolean(t *testing.T) {
	for _, tc := range []struct {
		v, want string
	}{
		{"1", "dlgt.sock"}, {"true", "dlgt.sock"}, {"TRUE", "dlgt.sock"},
		{"0", "cannot locate the dlgt executable"}, {"false", "cannot locate the dlgt executable"},
		{"maybe", "is not a boolean"},
	} {
		vars := map[string]string{}
		e, out, _ := testEnv(t, vars, "")
		vars["DLGT_NO_AUTOSTART"] = tc.v
		code, stdout := runCLI(t, e, out, "session", "list")
		wantCode := rpc.CodeRPCUnavailable
		if tc.v == "maybe" {
			wantCode = rpc.CodeInvalidArgument
		}
		if code != cli.ExitError || !strings.Contains(stdout, `"code":"`+string(wantCode)+`"`) || !strings.Contains(stdout, tc.want) {
			t.Fatalf("DLGT_NO_AUTOSTART=%s: exit %d, stdout %q, want %s %q", tc.v, code, stdout, wantCode, tc.want)
		}
	}
}

// daemon status with no daemon is a documented answer, not a failure.
func TestCLIDaemonStatusNoDaemon(t *testing.T) {
	vars := map[string]string{}
	e, out, _ := testEnv(t, vars, "")
	code, stdout := runCLI(t, e, out, "daemon", "status")
	m := oneJSONLine(t, stdout)
	if code != cli.ExitOK || m["ok"] != true || m["running"] != false || !strings.HasSuffix(m["socket"].(string), "dlgt.sock") {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	// A stale socket file nobody listens on reads the same.
	sock := m["socket"].(string)
	os.MkdirAll(sock[:strings.LastIndex(sock, "/")], 0o700)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	e, out, _ = testEnv(t, vars, "")
	if code, stdout := runCLI(t, e, out, "daemon", "status"); code != cli.ExitOK || !strings.Contains(stdout, `"running":false`) {
		t.Fatalf("stale socket: exit %d, stdout %q", code, stdout)
	}
	e, out, _ = testEnv(t, vars, "")
	if code, stdout := runCLI(t, e, out, "daemon", "status", "-o", "text"); code != cli.ExitOK || stdout != "not running (socket "+sock+")\n" {
		t.Fatalf("-o text: exit %d, stdout %q", code, stdout)
	}
}

// daemon stop asks the daemon to shut down and waits for its socket to go.
func TestDaemonStop(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"daemon", "stop"}, `{"ok":true,"stopped":true}` + "\n"},
		{[]string{"daemon", "stop", "-o", "text"}, "stopped\n"},
	} {
		d := testkit.NewFakeDaemon(t)
		d.Set(rpc.MethodDaemonShutdown, struct{}{})
		go func() { // the daemon's socket goes once it has been asked
			for deadline := time.Now().Add(10 * time.Second); len(d.Params(rpc.MethodDaemonShutdown)) == 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			os.Remove(d.Socket)
		}()
		e, out, _ := cliEnv(t, d, nil, nil, "")
		if code, stdout := runCLI(t, e, out, tc.args...); code != cli.ExitOK || stdout != tc.want {
			t.Fatalf("%v: exit %d, stdout %q, want %q", tc.args, code, stdout, tc.want)
		}
	}
}

func TestCreateHelpSaysWhatIsRequired(t *testing.T) {
	e, out, _ := testEnv(t, nil, "")
	code, stdout := runCLI(t, e, out, "session", "create", "--help")
	for _, want := range []string{"Required: --harness", "Without --title the title is the prompt", "Without --request-id the command makes one", "--harness-option permission-mode=default"} {
		if code != cli.ExitOK || !strings.Contains(stdout, want) {
			t.Fatalf("create --help lacks %q:\n%s", want, stdout)
		}
	}
	e, out, _ = testEnv(t, nil, "")
	if _, stdout := runCLI(t, e, out, "session", "send", "--help"); !strings.Contains(stdout, "permission-mode=default for its prompts") {
		t.Fatalf("send --help: --no-auto-approve does not say how to get Claude's prompts:\n%s", stdout)
	}
}

// Every command of the tree, at every level, answers an unknown flag with
// the JSON failure (INVALID_ARGUMENT, exit 1) and its usage on stderr; every
// command taking SESSION answers its absence the same way.
func TestCLIEveryCommandUnknownFlagAndMissingArgument(t *testing.T) {
	e0, _, _ := testEnv(t, nil, "")
	var paths [][]string
	var visit func(c *cobra.Command, path []string)
	visit = func(c *cobra.Command, path []string) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			visit(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	visit(newRootCommand(e0), nil)
	if len(paths) < 20 {
		t.Fatalf("only %d commands found", len(paths))
	}
	check := func(args []string, wantMsg string) {
		t.Helper()
		e, out, errb := testEnv(t, nil, "")
		code := run(args, e)
		line, usage := out.String(), errb.String()
		if len(args) > 0 && args[0] == "rpc" {
			line, usage, _ = strings.Cut(errb.String(), "\n")
			if out.Len() != 0 {
				t.Errorf("%v: rpc wrote %q on stdout", args, out)
			}
		}
		if code != cli.ExitError || !strings.HasPrefix(line, `{"ok":false,"error":{"code":"INVALID_ARGUMENT","message":`) ||
			!strings.Contains(line, wantMsg) || !strings.Contains(usage, "Usage:") {
			t.Errorf("%v: exit %d, line %q, stderr %q", args, code, line, usage)
		}
	}
	for _, p := range paths {
		check(append(append([]string(nil), p...), "--no-such-flag"), "unknown flag: --no-such-flag")
		if cli.SessionArgCommands["dlgt "+strings.Join(p, " ")] {
			check(p, "")
		}
	}
}

// RPC_UNAVAILABLE without auto-start says which socket was tried, why no
// daemon was started, and what to do.
func TestCLIRPCUnavailableSaysWhatToDo(t *testing.T) {
	vars := map[string]string{}
	e, out, _ := testEnv(t, vars, "")
	code, stdout := runCLI(t, e, out, "session", "list")
	if code != cli.ExitError || !strings.Contains(stdout, vars["DLGT_HOME"]+"/run/") || !strings.Contains(stdout, "DLGT_NO_AUTOSTART is true") || !strings.Contains(stdout, "dlgt daemon") {
		t.Fatalf("exit %d, %q", code, stdout)
	}
	sock := filepath.Join(t.TempDir(), "pinned.sock")
	vars = map[string]string{"DLGT_SOCKET": sock}
	e, out, _ = testEnv(t, vars, "")
	vars["DLGT_NO_AUTOSTART"] = ""
	if code, stdout := runCLI(t, e, out, "session", "list"); code != cli.ExitError || !strings.Contains(stdout, sock) || !strings.Contains(stdout, "DLGT_SOCKET pins this socket") {
		t.Fatalf("exit %d, %q", code, stdout)
	}
}

// With no daemon (and auto-start off), every command that needs one fails
// the same way: RPC_UNAVAILABLE as the JSON line, exit 1, no usage.
func TestCLIEveryCommandDaemonDown(t *testing.T) {
	for _, args := range [][]string{
		{"session", "create", "--harness", "claude", "--title", "t", "--request-id", "r", "--", "hi"},
		{"session", "send", "review", "--request-id", "r", "--", "hi"},
		{"session", "fetch", "review"}, {"session", "fetch", "--all"}, {"session", "read", "review"},
		{"session", "list"}, {"session", "list", "--watch"},
		{"session", "cancel", "review"}, {"session", "stop", "review"}, {"session", "restart", "review"},
		{"events"}, {"events", "--follow"}, {"scrollback", "review"}, {"models", "--harness", "codex"},
		{"harnesses"}, {"daemon", "stop"},
	} {
		e, out, errb := testEnv(t, nil, "")
		code, stdout := runCLI(t, e, out, args...)
		if code != cli.ExitError || !strings.HasPrefix(stdout, `{"ok":false,"error":{"code":"RPC_UNAVAILABLE"`) || strings.Count(stdout, "\n") != 1 || strings.Contains(errb.String(), "Usage:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, errb)
		}
		if args[0] == "daemon" && !strings.Contains(stdout, "no daemon is running (socket ") {
			t.Errorf("daemon stop with none running: %q", stdout)
		}
	}
	// transcript --raw keeps stdout for the bytes: its failure line is on
	// stderr; rpc --stdio likewise.
	for _, args := range [][]string{{"transcript", "review", "--raw"}, {"rpc", "--stdio"}} {
		e, out, errb := testEnv(t, nil, "")
		code, stdout := runCLI(t, e, out, args...)
		if code != cli.ExitError || stdout != "" || !strings.Contains(errb.String(), "RPC_UNAVAILABLE") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, errb)
		}
	}
}

// With -o text a failure is text on stderr (code, message, the Session,
// a hint), stdout stays empty and the exit status is the code's; a
// usage error still ends with the usage, and no other failure does.
func TestCLIFailureAsText(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodSessionCreate, &rpc.Error{Code: rpc.CodeSessionBlocked, SessionID: "claude:9", Message: "the Session waits for human input"})
	d.Set(rpc.MethodSessionRead, &rpc.Error{Code: rpc.CodeNotFound, Message: `no Session "nope" on this daemon`})
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		want  []string
		usage bool
	}{
		{"daemon error", []string{"session", "create", "--harness", "claude", "--title", "t", "--request-id", "r1", "-o", "text", "--", "hi"}, cli.ExitBlocked,
			[]string{"dlgt: SESSION_BLOCKED: the Session waits for human input\n", "session: claude:9\n", "hint: ", "dlgt session respond claude:9 --allow", "dlgt session attach claude:9"}, false},
		{"not found", []string{"session", "read", "nope", "-o", "text"}, cli.ExitError,
			[]string{"dlgt: NOT_FOUND: no Session \"nope\" on this daemon\n", "hint: dlgt session list --all"}, false},
		{"usage error", []string{"session", "fetch", "x", "--until", "foo", "-o", "text"}, cli.ExitError,
			[]string{"dlgt: INVALID_ARGUMENT: "}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errb := cliEnv(t, d, nil, []string{"PATH=/bin"}, "")
			code, stdout := runCLI(t, e, out, tc.args...)
			if code != tc.code || stdout != "" {
				t.Fatalf("exit %d (want %d), stdout %q", code, tc.code, stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(errb.String(), w) {
					t.Fatalf("stderr %q lacks %q", errb, w)
				}
			}
			if strings.Contains(errb.String(), "{") && !tc.usage {
				t.Fatalf("stderr holds JSON: %q", errb)
			}
			if got := strings.Contains(errb.String(), "Usage:"); got != tc.usage {
				t.Fatalf("usage printed: %v, want %v: %q", got, tc.usage, errb)
			}
		})
	}
}

// A failure that is no fault of the command line prints no usage block:
// mcp config for a harness that takes MCP servers only from its settings.
func TestMCPConfigGeminiNoUsage(t *testing.T) {
	e, out, errb := testEnv(t, nil, "")
	code, stdout := runCLI(t, e, out, "mcp", "config", "--harness", "gemini")
	if code != cli.ExitError || !strings.Contains(stdout, "mcp install --harness gemini") || strings.Contains(errb.String(), "Usage:") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errb)
	}
}
