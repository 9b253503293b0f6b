package fakeclaude

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// settingsFile is the part of a Claude settings object the fake reads.
type settingsFile struct {
	Hooks map[string][]matcherGroup `json:"hooks"`
	policyFields
}

// policyFields are what a settings file says http hooks may do; a nil
// list is one the file does not set.
type policyFields struct {
	AllowedHTTPHookURLs    *[]string `json:"allowedHttpHookUrls"`
	HTTPHookAllowedEnvVars *[]string `json:"httpHookAllowedEnvVars"`
}

type matcherGroup struct {
	Matcher string    `json:"matcher"`
	Hooks   []hookDef `json:"hooks"`
}

type hookDef struct {
	Type    string  `json:"type"`
	Command string  `json:"command"`
	Timeout float64 `json:"timeout"` // seconds
	// An http hook's fields.
	URL            string            `json:"url"`
	Headers        map[string]string `json:"headers"`
	AllowedEnvVars []string          `json:"allowedEnvVars"`
}

// HookStarted, when set, is called as a hook for event begins: before
// the shell of a command hook is started, before an http hook's request
// is made (the outside-in benchmark's stamp).
var HookStarted func(event string, http bool)

// defaultHookTimeout is Claude Code's default command-hook timeout.
const defaultHookTimeout = 600 * time.Second

// timeout is the hook's own timeout, else the default.
func (d hookDef) timeout() time.Duration {
	if d.Timeout > 0 {
		return time.Duration(d.Timeout * float64(time.Second))
	}
	return defaultHookTimeout
}

// managedSettingsDir holds the managed settings on Linux, as the real
// CLI reads them.
const managedSettingsDir = "/etc/claude-code"

// httpPolicy is what the settings let http hooks do, merged over every
// settings file the real CLI reads (managed, user, project, local, and
// --settings): the URLs they may post to (allowedHttpHookUrls, patterns
// with * wildcards) and the variables their headers may use
// (httpHookAllowedEnvVars). A list no file sets does not restrict.
// Checked against the real CLI 2.1.332: a hook whose URL no pattern
// matches is not run, and a variable outside the list expands to "".
type httpPolicy struct {
	urls, vars       []string
	urlsSet, varsSet bool
}

// loadHTTPPolicy reads the policy for a session in cwd; flag is the
// --settings object's. A missing or malformed file sets nothing; only
// the two settings are read from a file, whatever else it holds.
func loadHTTPPolicy(home, cwd string, flag policyFields) httpPolicy {
	paths := []string{filepath.Join(managedSettingsDir, "managed-settings.json")}
	if more, err := filepath.Glob(filepath.Join(managedSettingsDir, "managed-settings.d", "*.json")); err == nil {
		paths = append(paths, more...)
	}
	config := os.Getenv("CLAUDE_CONFIG_DIR")
	if config == "" {
		config = filepath.Join(home, ".claude")
	}
	paths = append(paths, filepath.Join(config, "settings.json"),
		filepath.Join(cwd, ".claude", "settings.json"), filepath.Join(cwd, ".claude", "settings.local.json"))
	var p httpPolicy
	add := func(f policyFields) {
		if f.AllowedHTTPHookURLs != nil {
			p.urlsSet, p.urls = true, append(p.urls, *f.AllowedHTTPHookURLs...)
		}
		if f.HTTPHookAllowedEnvVars != nil {
			p.varsSet, p.vars = true, append(p.vars, *f.HTTPHookAllowedEnvVars...)
		}
	}
	for _, path := range paths {
		var f policyFields
		if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &f) == nil {
			add(f)
		}
	}
	add(flag)
	return p
}

// allowsURL reports whether an http hook may post to url.
func (p httpPolicy) allowsURL(url string) bool {
	if !p.urlsSet {
		return true
	}
	return slices.ContainsFunc(p.urls, func(pattern string) bool {
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$"
		ok, err := regexp.MatchString(re, url)
		return err == nil && ok
	})
}

// envVars narrows a hook's allowedEnvVars to those the policy allows.
func (p httpPolicy) envVars(hook []string) []string {
	if !p.varsSet {
		return hook
	}
	var out []string
	for _, v := range hook {
		if slices.Contains(p.vars, v) {
			out = append(out, v)
		}
	}
	return out
}

// loadSettings parses --settings: inline JSON when it looks like an
// object, else the path of a JSON file (both forms work with the real CLI).
func loadSettings(arg string) (settingsFile, error) {
	if arg == "" {
		return settingsFile{}, nil
	}
	data := []byte(arg)
	if !strings.HasPrefix(strings.TrimSpace(arg), "{") {
		b, err := os.ReadFile(arg)
		if err != nil {
			return settingsFile{}, fmt.Errorf("Error processing --settings: %v", err)
		}
		data = b
	}
	var s settingsFile
	if err := json.Unmarshal(data, &s); err != nil {
		return settingsFile{}, fmt.Errorf("Error processing --settings: invalid JSON: %v", err)
	}
	for ev, groups := range s.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				if h.Type == "command" && strings.TrimSpace(h.Command) == "" {
					return settingsFile{}, fmt.Errorf("Error processing --settings: hooks.%s: command hook without a command", ev)
				}
			}
		}
	}
	return s, nil
}

// obj is a JSON object that keeps its keys in insertion order, so payloads
// come out with the same field order as the real CLI's (easier to diff).
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) with(k string, v any) obj { return append(o[:len(o):len(o)], kv{k, v}) }

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping: JavaScript's
// JSON.stringify leaves <, > and & alone.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// hookJob is one event to deliver to every matching hook.
type hookJob struct {
	event    string
	matchKey string // what a group's matcher is tested against (tool name, notification type, ...)
	payload  []byte
	done     chan struct{}
}

// hookRunner runs hooks one event at a time, in the order they were fired.
// A single worker goroutine keeps the global order of events intact even
// when the turn goroutine and the main loop fire hooks concurrently (e.g. an
// idle_prompt Notification queued just before the next UserPromptSubmit).
type hookRunner struct {
	groups map[string][]matcherGroup
	policy httpPolicy
	cwd    string
	silent bool
	logf   func(format string, args ...any)
	queue  chan hookJob
}

func newHookRunner(groups map[string][]matcherGroup, policy httpPolicy, cwd string, silent bool, logf func(string, ...any)) *hookRunner {
	h := &hookRunner{groups: groups, policy: policy, cwd: cwd, silent: silent, logf: logf, queue: make(chan hookJob, 64)}
	go h.work()
	return h
}

// fire queues event and returns a channel closed once every matching hook
// has finished (or timed out). Callers that imitate Claude's synchronous
// hooks wait on it; notifications do not.
func (h *hookRunner) fire(event, matchKey string, payload obj) <-chan struct{} {
	done := make(chan struct{})
	if h.silent || len(h.groups[event]) == 0 {
		close(done)
		return done
	}
	data, err := marshal(payload)
	if err != nil {
		h.logf("fakeclaude: encoding %s payload: %v", event, err)
		close(done)
		return done
	}
	h.queue <- hookJob{event: event, matchKey: matchKey, payload: data, done: done}
	return done
}

func (h *hookRunner) work() {
	for job := range h.queue {
		h.run(job)
		close(job.done)
	}
}

// run runs the matching hooks of one event in parallel, as Claude does,
// and waits for all of them.
func (h *hookRunner) run(job hookJob) {
	var wg sync.WaitGroup
	for _, g := range h.groups[job.event] {
		if !matches(g.Matcher, job.matchKey) {
			continue
		}
		for _, def := range g.Hooks {
			run := h.runOne
			switch {
			case def.Type == "http" && job.event == "SessionStart":
				// As the real CLI: "HTTP hooks are not supported for SessionStart".
				h.logf("Skipping HTTP hook %s — HTTP hooks are not supported for %s", def.URL, job.event)
				continue
			case def.Type == "http" && !h.policy.allowsURL(def.URL):
				continue // as the real CLI: dropped without a word
			case def.Type == "http":
				run = h.post
			case def.Type != "command":
				continue // prompt/agent hooks need a model
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				run(job, def)
			}()
		}
	}
	wg.Wait()
}

// hookDecision is a PermissionRequest hook's decision.
type hookDecision struct {
	allow   bool
	message string
}

// decide runs event's matching command hooks now, outside the queue and
// concurrently with whatever the caller shows (the real CLI runs
// PermissionRequest hooks while its dialog is up), and sends the first
// decision one prints as hookSpecificOutput (nil when none does) on the
// returned channel. Canceling ctx kills the hooks still running, as the
// real CLI's abort does.
func (h *hookRunner) decide(ctx context.Context, event, matchKey string, payload obj) <-chan *hookDecision {
	out := make(chan *hookDecision, 1)
	data, err := marshal(payload)
	if h.silent || len(h.groups[event]) == 0 || err != nil {
		out <- nil
		return out
	}
	job := hookJob{event: event, matchKey: matchKey, payload: data}
	go func() {
		var (
			mu    sync.Mutex
			first *hookDecision
			wg    sync.WaitGroup
		)
		for _, g := range h.groups[event] {
			if !matches(g.Matcher, matchKey) {
				continue
			}
			for _, def := range g.Hooks {
				if def.Type == "http" {
					if h.policy.allowsURL(def.URL) {
						wg.Add(1)
						go func() { defer wg.Done(); h.post(job, def) }()
					}
					continue
				}
				if def.Type != "command" {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if d := parseDecision(event, h.runCapture(ctx, job, def)); d != nil {
						mu.Lock()
						if first == nil {
							first = d
							out <- d
						}
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		mu.Lock()
		if first == nil {
			out <- nil
		}
		mu.Unlock()
	}()
	return out
}

// parseDecision reads a hook's stdout as the real CLI does for
// PermissionRequest: a JSON object whose hookSpecificOutput names the
// event and carries decision.behavior allow or deny (with message).
// Anything else is no decision.
func parseDecision(event string, stdout []byte) *hookDecision {
	t := bytes.TrimSpace(stdout)
	if len(t) == 0 || t[0] != '{' {
		return nil
	}
	var o struct {
		HookSpecificOutput *struct {
			HookEventName string `json:"hookEventName"`
			Decision      *struct {
				Behavior string `json:"behavior"`
				Message  string `json:"message"`
			} `json:"decision"`
		} `json:"hookSpecificOutput"`
	}
	if json.Unmarshal(t, &o) != nil || o.HookSpecificOutput == nil || o.HookSpecificOutput.HookEventName != event || o.HookSpecificOutput.Decision == nil {
		return nil
	}
	switch d := o.HookSpecificOutput.Decision; d.Behavior {
	case "allow":
		return &hookDecision{allow: true}
	case "deny":
		return &hookDecision{message: d.Message}
	}
	return nil
}

// runCapture is runOne for a hook whose stdout matters: it returns the
// first 64 KiB of it.
func (h *hookRunner) runCapture(ctx context.Context, job hookJob, def hookDef) []byte {
	timeout := def.timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout bytes.Buffer
	cmd, stderr := h.hookCmd(ctx, job, def, &limitedWriter{w: &stdout, n: 64 << 10})
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("ended after %v: %v", timeout, ctx.Err())
		}
		h.logf("%s hook [%s] failed: %v %s", job.event, def.Command, err, strings.TrimSpace(stderr.String()))
		return nil
	}
	return stdout.Bytes()
}

// runOne runs one command hook through /bin/sh with the payload on stdin.
// Its stdout is ignored; a failure is only logged.
func (h *hookRunner) runOne(job hookJob, def hookDef) {
	timeout := def.timeout()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd, stderr := h.hookCmd(ctx, job, def, io.Discard)
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %v", timeout)
		}
		h.logf("%s hook [%s] failed: %v %s", job.event, def.Command, err, strings.TrimSpace(stderr.String()))
	}
}

// hookCmd is def's command through /bin/sh under ctx for job, ready to
// run: in the project directory, the payload on stdin, its stdout to
// stdout and the first 4 KiB of its stderr to the returned buffer.
// HookStarted is told. The hook gets its own process group so a timeout
// kills whatever it started, and WaitDelay stops a grandchild holding the
// pipes open from stalling us.
func (h *hookRunner) hookCmd(ctx context.Context, job hookJob, def hookDef, stdout io.Writer) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", def.Command)
	cmd.Dir = h.cwd
	cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+h.cwd)
	cmd.Stdin = bytes.NewReader(job.payload)
	cmd.Stdout = stdout
	stderr := &bytes.Buffer{}
	cmd.Stderr = &limitedWriter{w: stderr, n: 4096}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	if HookStarted != nil {
		HookStarted(job.event, false)
	}
	return cmd, stderr
}

// post runs one http hook as the real CLI does: the payload POSTed as
// JSON to the hook's url, header values with $VAR and ${VAR} filled from
// the environment for the variables in allowedEnvVars only (others become
// empty). Its response body is ignored; a failure is only logged.
func (h *hookRunner) post(job hookJob, def hookDef) {
	timeout := def.timeout()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if HookStarted != nil {
		HookStarted(job.event, true)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, def.URL, bytes.NewReader(job.payload))
	if err != nil {
		h.logf("%s HTTP hook [%s] failed: %v", job.event, def.URL, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range def.Headers {
		req.Header.Set(k, expandAllowed(v, h.policy.envVars(def.AllowedEnvVars)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.logf("%s HTTP hook [%s] failed: %v", job.event, def.URL, err)
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		h.logf("%s HTTP hook [%s] failed: status %d", job.event, def.URL, resp.StatusCode)
	}
}

// envRef is a $VAR or ${VAR} reference in an http hook's header value.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expandAllowed fills the references in v to variables in allowed from
// the environment; references to any other variable become empty.
func expandAllowed(v string, allowed []string) string {
	return envRef.ReplaceAllStringFunc(v, func(ref string) string {
		m := envRef.FindStringSubmatch(ref)
		if name := m[1] + m[2]; slices.Contains(allowed, name) {
			return os.Getenv(name)
		}
		return ""
	})
}

// matches applies a hook group's matcher: empty or "*" matches everything,
// otherwise it is a regular expression over the whole key ("Bash",
// "Edit|Write", "permission_prompt"), falling back to exact comparison.
func matches(matcher, key string) bool {
	if matcher == "" || matcher == "*" {
		return true
	}
	if re, err := regexp.Compile("^(?:" + matcher + ")$"); err == nil {
		return re.MatchString(key)
	}
	return matcher == key
}

type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		q := p
		if len(q) > l.n {
			q = q[:l.n]
		}
		l.n -= len(q)
		l.w.Write(q)
	}
	return len(p), nil
}
