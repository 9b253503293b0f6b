package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

func piece(seq uint64, text string, off int, complete bool) rpc.Result {
	return rpc.Result{ExecutionSeq: seq, Status: rpc.StatusCompleted, FinalText: &text, FinalTextSource: "hook",
		FinalTextOffset: &off, FinalTextComplete: &complete}
}

func texts(rs []rpc.Result) string {
	var out []string
	for _, r := range rs {
		if r.FinalTextOffset != nil || r.FinalTextComplete != nil {
			return "chunk fields left"
		}
		out = append(out, *r.FinalText)
	}
	return strings.Join(out, "|")
}

// A continuation at the length so far is appended; a piece replayed from
// offset 0 (the same cursor fetched again) replaces the earlier copy, as
// the contract's replay rule requires; a replayed later piece does not
// double its bytes; another execution starts a new result.
func TestJoinChunk(t *testing.T) {
	var rs []rpc.Result
	for _, r := range []rpc.Result{
		piece(2, "two", 0, true),
		piece(3, "thr", 0, false), piece(3, "ee", 3, true),
		piece(4, "fo", 0, false),
		piece(4, "fo", 0, false), // a replay from the start
		piece(4, "u", 2, false),
		piece(4, "u", 2, false), // a replayed middle piece
		piece(4, "r", 3, true),
	} {
		rs = client.JoinChunk(rs, r)
	}
	if got := texts(rs); got != "two|three|four" {
		t.Fatalf("joined %q", got)
	}
	// The other fields are the latest piece's (usage on the last only).
	last := piece(5, "ve", 2, true)
	last.Usage = json.RawMessage(`{"total_tokens":7}`)
	if rs := client.JoinChunk(client.JoinChunk(nil, piece(5, "fi", 0, false)), last); texts(rs) != "five" || string(rs[0].Usage) != `{"total_tokens":7}` {
		t.Fatalf("usage of the last piece lost: %+v", rs)
	}
	// A whole result replayed at offset 0 after its pieces replaces them.
	rs = client.JoinChunk(rs, piece(4, "four", 0, true))
	if got := texts(rs); got != "two|three|four" {
		t.Fatalf("after a whole replay %q", got)
	}
}

// writeProfiles writes a profiles file under home.
func writeProfiles(t *testing.T, home, data string) {
	t.Helper()
	os.MkdirAll(home, 0o700)
	if err := os.WriteFile(filepath.Join(home, "profiles.toml"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

const testProfiles = `
[profiles.review]
harness = "claude"
model = "opus"
effort = "high"
harness_options = ["max-turns=3"]
[profiles.review.environment]
PROFILE_VAR = "p"
SHARED = "from-profile"

[profiles.ask]
harness = "claude"
harness_options = ["permission-mode=default"]
auto_approve = false

[profiles.far]
harness = "codex"
host = "dev@build-box:2222"
[profiles.far.environment]
FAR_VAR = "f"
`

// The one launch precedence: client environment < profile < explicit
// choices; a relative cwd is made absolute here, and a profile's host
// moves the launch there with the profile's environment alone.
func TestResolveLaunch(t *testing.T) {
	home := t.TempDir()
	writeProfiles(t, home, testProfiles)
	clientEnv := map[string]string{"PATH": "/bin", "SHARED": "from-client", "HOME": "/home/me"}
	c := newClient(t, client.Options{Home: home, Environ: environ(clientEnv)})
	wd, _ := os.Getwd()

	l, err := c.ResolveLaunch(client.LaunchSpec{Profile: "review", Effort: "low", Cwd: "sub", Title: "t", Prompt: "p", RequestID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	p := l.Params
	if l.Host != "" || p.Harness != "claude" || p.Model != "opus" || p.Effort != "low" || strings.Join(p.HarnessOptions, ",") != "max-turns=3" ||
		p.Cwd != filepath.Join(wd, "sub") || p.Title != "t" || p.Prompt != "p" || p.RequestID != "r" || p.AutoApprove != nil {
		t.Fatalf("local profile launch: %+v", l)
	}
	if p.Environment["PATH"] != "/bin" || p.Environment["HOME"] != "/home/me" || p.Environment["PROFILE_VAR"] != "p" || p.Environment["SHARED"] != "from-profile" {
		t.Fatalf("local environment: %v", p.Environment)
	}

	// A profile's auto_approve = false launches with the harness's own
	// prompts (as --no-auto-approve), for whoever may answer them.
	l, err = c.ResolveLaunch(client.LaunchSpec{Profile: "ask", Prompt: "p", RequestID: "r"})
	if err != nil || l.Params.AutoApprove == nil || *l.Params.AutoApprove || strings.Join(l.Params.HarnessOptions, ",") != "permission-mode=default" {
		t.Fatalf("auto_approve=false profile: %+v %v", l, err)
	}

	// No cwd: this process's directory for a create, none for a resume.
	l, err = c.ResolveLaunch(client.LaunchSpec{Harness: "codex", NoAutoApprove: true, StartupTimeout: 90 * time.Second})
	if err != nil || l.Params.Cwd != wd || l.Params.AutoApprove == nil || *l.Params.AutoApprove || l.Params.StartupTimeoutMS != 90000 {
		t.Fatalf("defaults: %+v %v", l, err)
	}
	l, err = c.ResolveLaunch(client.LaunchSpec{Resume: true})
	if err != nil || l.Params.Cwd != "" || l.Params.Harness != "" {
		t.Fatalf("resume: %+v %v", l, err)
	}
	if sp := l.ResumeParams("claude:x"); !sp.Resume || sp.Session != "claude:x" || sp.Environment["PATH"] != "/bin" {
		t.Fatalf("resume params: %+v", sp)
	}

	// A profile with a host resolves to that host.
	l, err = c.ResolveLaunch(client.LaunchSpec{Profile: "far", Cwd: "/srv/app"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Host != "dev@build-box:2222" || l.Params.Harness != "codex" || l.Params.Cwd != "/srv/app" {
		t.Fatalf("remote profile launch: %+v", l)
	}
	if len(l.Params.Environment) != 1 || l.Params.Environment["FAR_VAR"] != "f" {
		t.Fatalf("remote profile environment is not the profile's alone: %v", l.Params.Environment)
	}
	l, err = c.ResolveLaunch(client.LaunchSpec{Profile: "far"})
	if err != nil || l.Host == "" || l.Params.Cwd != "" {
		t.Fatalf("remote profile without cwd: %+v %v", l, err)
	}
	_, err = c.ResolveLaunch(client.LaunchSpec{Profile: "far", Cwd: "rel"})
	wantCode(t, err, rpc.CodeInvalidArgument, "must be an absolute path on the remote host")

	// DLGT_HOST gives way to the profile's host; an explicit host does not.
	c2 := newClient(t, client.Options{Home: home, Environ: environ(clientEnv), Getenv: env(map[string]string{"DLGT_HOST": "other"})})
	if l, err := c2.ResolveLaunch(client.LaunchSpec{Profile: "far"}); err != nil || l.Host != "dev@build-box:2222" {
		t.Fatalf("DLGT_HOST with a host profile: %+v %v", l, err)
	}
	if l, err := c2.ResolveLaunch(client.LaunchSpec{Profile: "review"}); err != nil || l.Host != "other" || len(l.Params.Environment) != 2 {
		t.Fatalf("DLGT_HOST with a local profile: %+v %v", l, err)
	}
	c3 := newClient(t, client.Options{Home: home, Environ: environ(clientEnv), Host: "local"})
	if l, err := c3.ResolveLaunch(client.LaunchSpec{Profile: "far"}); err != nil || l.Host != "" || l.Params.Environment["PATH"] != "/bin" {
		t.Fatalf("explicit local host with a host profile: %+v %v", l, err)
	}

	// Bad input is typed and names the field.
	_, err = c.ResolveLaunch(client.LaunchSpec{Profile: "nope"})
	wantCode(t, err, rpc.CodeNotFound, `profile "nope" is not defined in `+filepath.Join(home, "profiles.toml"))
	_, err = c.ResolveLaunch(client.LaunchSpec{})
	wantCode(t, err, rpc.CodeInvalidArgument, "harness")
	_, err = c.ResolveLaunch(client.LaunchSpec{Harness: "claude", HarnessOptions: []string{"novalue"}})
	wantCode(t, err, rpc.CodeInvalidArgument, `"novalue" is not KEY=VALUE`)
	_, err = c.ResolveLaunch(client.LaunchSpec{Harness: "claude", StartupTimeout: -time.Second})
	wantCode(t, err, rpc.CodeInvalidArgument, "must not be negative")
	writeProfiles(t, home, "[profiles.bad]\nhost = \"-oProxyCommand=x\"\n")
	_, err = c.ResolveLaunch(client.LaunchSpec{Profile: "bad", Harness: "claude"})
	wantCode(t, err, rpc.CodeInvalidArgument, "host")
}

// Launch sends a resolved launch to its host: a profile with a host never
// creates the Session here. (The host's ssh fails at once: DLGT_SSH_COMMAND
// is a command that records its arguments and exits 255.)
func TestLaunchGoesToTheProfilesHost(t *testing.T) {
	home := filepath.Join(shortDir(t), "h")
	writeProfiles(t, home, testProfiles)
	startDaemon(t, home)
	record := filepath.Join(t.TempDir(), "ssh-args")
	ssh := "printf '%s\\n' \"$@\" > " + record + "; echo 'ssh: no route' >&2; exit 255"
	c := newClient(t, client.Options{Home: home, Environ: environ(nil), Getenv: env(map[string]string{"DLGT_SSH_COMMAND": ssh})})
	l, err := c.ResolveLaunch(client.LaunchSpec{Profile: "far", Title: "t", Prompt: "p", RequestID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = c.Launch(ctx, l)
	wantCode(t, err, rpc.CodeRPCUnavailable, "host dev@build-box:2222: ssh failed", "ssh: no route")
	args, _ := os.ReadFile(record)
	if !strings.Contains(string(args), "\ndev@build-box\n") || !strings.Contains(string(args), "\n-p\n2222\n") || !strings.HasSuffix(string(args), "'dlgt' 'rpc' '--stdio' '--remote'\n") {
		t.Fatalf("ssh ran with:\n%s", args)
	}
	list, err := c.SessionList(ctx, rpc.SessionListParams{All: true})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("a Session was created here: %+v %v", list, err)
	}
}

func TestCheckHost(t *testing.T) {
	for _, ok := range []string{"box", "dev@box", "box:22", "dev@10.0.0.1:2222", "[::1]:2222", "::1"} {
		if err := client.CheckHost(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-oProxyCommand=x", "dev@-x", "@box", "a@b@c", "box:0", "box:99999", "box:port", "[::1", "[::1]x", "box;rm", "a b"} {
		err := client.CheckHost(bad)
		var re *rpc.Error
		if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument || re.Field != "host" {
			t.Errorf("%q: %v, want INVALID_ARGUMENT on host", bad, err)
		}
	}
	if _, err := client.New(client.Options{Host: "-oProxyCommand=x"}); !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Errorf("New with a bad host: %v", err)
	}
}

// RemoteCommand is ssh without a prompt, sharing one connection, with
// keepalives, the port and the quoted remote command; with tty, -t.
func TestRemoteCommand(t *testing.T) {
	c := newClient(t, client.Options{Host: "dev@box:2222", Getenv: env(map[string]string{"DLGT_REMOTE_BIN": "/opt/dlgt it's"})})
	cmd, err := c.RemoteCommand(context.Background(), false, "session", "list")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cmd.Args, " ")
	for _, w := range []string{"ssh -T -o BatchMode=yes -o ControlMaster=auto -o ControlPath=", "-o ServerAliveInterval=15", "-p 2222 dev@box '/opt/dlgt it'\\''s' 'session' 'list'"} {
		if !strings.Contains(got, w) {
			t.Fatalf("argv %q lacks %q", got, w)
		}
	}
	cmd, _ = c.RemoteCommand(context.Background(), true, "session", "attach", "x")
	if got := strings.Join(cmd.Args, " "); !strings.HasPrefix(got, "ssh -t -o ServerAliveInterval") || strings.Contains(got, "BatchMode") {
		t.Fatalf("tty argv %q", got)
	}
	if _, err := newClient(t, client.Options{}).RemoteCommand(context.Background(), false, "x"); err == nil {
		t.Fatal("RemoteCommand without a host")
	}
}

// FillLaunch (the remote proxy's rewrite) puts that side's environment
// under what the client sent, and that side's directory in a create
// without a cwd; other methods, and a send without resume, pass.
func TestFillLaunch(t *testing.T) {
	fill := client.FillLaunch(func() []string { return []string{"PATH=/remote/bin", "KEEP=remote", "noequals"} })
	out, err := fill(rpc.MethodSessionCreate, json.RawMessage(`{"title":"t","environment":{"KEEP":"client"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Cwd         string
		Environment map[string]string
	}
	json.Unmarshal(out, &p)
	wd, _ := os.Getwd()
	if p.Cwd != wd || p.Environment["PATH"] != "/remote/bin" || p.Environment["KEEP"] != "client" || len(p.Environment) != 2 {
		t.Fatalf("create rewritten to %s", out)
	}
	out, _ = fill(rpc.MethodSessionCreate, json.RawMessage(`{"cwd":"/srv"}`))
	if json.Unmarshal(out, &p); p.Cwd != "/srv" {
		t.Fatalf("a given cwd changed: %s", out)
	}
	for _, tc := range []struct{ method, params string }{
		{rpc.MethodSessionSend, `{"session":"s"}`}, {rpc.MethodSessionList, `{}`}, {rpc.MethodSessionCreate, `[1]`},
	} {
		if out, err := fill(tc.method, json.RawMessage(tc.params)); out != nil || err != nil {
			t.Errorf("%s %s rewritten to %s %v", tc.method, tc.params, out, err)
		}
	}
	if out, _ := fill(rpc.MethodSessionSend, json.RawMessage(`{"session":"s","resume":true}`)); !strings.Contains(string(out), `"PATH":"/remote/bin"`) || strings.Contains(string(out), "cwd") {
		t.Errorf("send resume rewritten to %s", out)
	}
	// harness.list lists what a create from that side would find.
	if out, _ := fill(rpc.MethodHarnessList, json.RawMessage(`{"harness":"codex"}`)); !strings.Contains(string(out), `"PATH":"/remote/bin"`) || strings.Contains(string(out), "cwd") {
		t.Errorf("harness.list rewritten to %s", out)
	}
}

// HelloLine is what the remote proxy greets with.
func TestHelloLine(t *testing.T) {
	var h struct {
		Hello struct {
			SchemaVersion int    `json:"schema_version"`
			Version       string `json:"version"`
		} `json:"hello"`
	}
	line := client.HelloLine(rpc.SchemaVersion)
	if !strings.HasSuffix(string(line), "}\n") || json.Unmarshal(line, &h) != nil || h.Hello.SchemaVersion != rpc.SchemaVersion || h.Hello.Version == "" {
		t.Fatalf("hello %q", line)
	}
}

// SSHLine spells every host form as a command ssh parses: the port as
// -p, never inside the destination, and an IPv6 address bare (doctor's
// fix hint; moved here from cmd/dlgt with the ssh transport).
func TestSSHLine(t *testing.T) {
	for host, want := range map[string]string{
		"devbox":               "ssh devbox",
		"me@devbox":            "ssh me@devbox",
		"devbox:2222":          "ssh -p 2222 devbox",
		"me@devbox:2222":       "ssh -p 2222 me@devbox",
		"[fe80::1]:2222":       "ssh -p 2222 fe80::1",
		"me@[fe80::1]:2222":    "ssh -p 2222 me@fe80::1",
		"[fe80::1]":            "ssh fe80::1",
		"fe80::1":              "ssh fe80::1",
		"me@devbox.example:22": "ssh -p 22 me@devbox.example",
	} {
		got, err := client.SSHLine(host)
		if err != nil {
			t.Errorf("%s: %v", host, err)
			continue
		}
		if got != want {
			t.Errorf("%s: %q, want %q", host, got, want)
		}
	}
	if _, err := client.SSHLine("-oProxyCommand=x"); err == nil {
		t.Error("a malformed host gave an ssh line")
	}
}

// A profile's worktree = true asks each create for a worktree (the
// branch from the alias) unless the caller says NoWorktree; an explicit
// branch wins; a resume never takes one.
func TestResolveLaunchWorktree(t *testing.T) {
	home := t.TempDir()
	writeProfiles(t, home, "[profiles.iso]\nharness = \"codex\"\nworktree = true\n")
	c := newClient(t, client.Options{Home: home, Environ: environ(map[string]string{"PATH": "/bin"})})
	for _, tc := range []struct {
		spec client.LaunchSpec
		want *rpc.WorktreeOption
	}{
		{client.LaunchSpec{Profile: "iso"}, &rpc.WorktreeOption{}},
		{client.LaunchSpec{Profile: "iso", NoWorktree: true}, nil},
		{client.LaunchSpec{Profile: "iso", Worktree: &rpc.WorktreeOption{Branch: "b"}}, &rpc.WorktreeOption{Branch: "b"}},
		{client.LaunchSpec{Harness: "codex"}, nil},
		{client.LaunchSpec{Profile: "iso", Resume: true}, nil},
	} {
		l, err := c.ResolveLaunch(tc.spec)
		if err != nil {
			t.Fatalf("%+v: %v", tc.spec, err)
		}
		if got := l.Params.Worktree; (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Fatalf("%+v: worktree %+v, want %+v", tc.spec, got, tc.want)
		}
	}
	if _, err := c.ResolveLaunch(client.LaunchSpec{Resume: true, Worktree: &rpc.WorktreeOption{}}); err == nil {
		t.Fatal("a resume with a worktree was accepted")
	}
	ps, err := c.LoadProfiles()
	if err != nil || !ps.List().Profiles[0].Worktree {
		t.Fatalf("profile.list: %+v %v", ps.List(), err)
	}
}
