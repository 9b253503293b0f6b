package daemon

// Warm spares (session.warm): harness processes started ahead for one
// launch shape, so that a session.create of exactly that shape finds its
// harness already up instead of waiting for the CLI to boot.
//
// A spare is a session object the daemon holds outside its Sessions: not
// in sessions, byID or aliases, so no list, fetch or read sees it; its
// record is never stored and its events are never recorded (persistLocked
// and emitLocked do nothing while s.spare is set). Hooks reach it through
// byLaunch like any launch's. Its harness's ready evidence (SessionStart)
// makes it ready without moving it: it stays "starting" until a create
// claims it, which then does what a cold launch's ready evidence does
// (bind the id: session.created; session.ready) and accepts the prompt,
// so the claimed Session's receipt, events and cursors are those of a
// cold one. A harness that reports nothing before its first turn (Codex,
// a harness.LaunchPrompter) is ready once its TUI takes a paste
// (bracketed paste on, the same evidence prompt delivery waits for) and,
// for a harness.SpareReadier (Codex), once it can run a turn; the
// claim types the prompt, and the first turn's SessionStart binds the
// Session as a launch prompt's would.
//
// The environment is part of the shape (its digest), so a spare only ever
// runs a create from a client that sent the same environment. The pool
// (package spares: its bounds, refills, expiry and stop) holds them
// through spareShape, the launcher this file gives it; a spare is never
// handed out if its harness binary changed since it started; rows a
// spare's screen scrolled into the store are deleted with it, and a
// daemon killed with spares running deletes what they left when it
// starts again (sweepOrphans).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/receipts"
	"github.com/dlgt-dev/dlgt/daemon/spares"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/procmem"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

const (
	maxSparesPerShape = spares.MaxPerShape
	maxSparesTotal    = spares.MaxTotal
	defaultSpareIdle  = 10 * time.Minute
	maxSpareIdle      = 24 * time.Hour
)

// spareClaimed, when set (by the tests), is told of every spare a create
// claims.
var spareClaimed func(uid string)

// spare is one warm harness process: the pool's item (package spares).
type spare struct {
	s *session
	// bin is the harness binary as it was when the spare started.
	bin fileIdentity
}

// sparePool is the runtime's pool of warm spares.
type sparePool = spares.Pool[*spare]

// spareShape is the launcher of one launch shape's spares: the pool
// (package spares) calls it to make, start, check and stop them.
type spareShape struct {
	rt  *runtime
	rec sessionRecord // the shape's record fields; a template
	lo  launchOpts
}

// fileIdentity tells a replaced binary from the one a spare runs.
type fileIdentity struct {
	path    string
	size    int64
	modTime time.Time
}

func identify(path string) fileIdentity {
	id := fileIdentity{path: path}
	if fi, err := os.Stat(path); err == nil {
		id.size, id.modTime = fi.Size(), fi.ModTime()
	}
	return id
}

// shapeKey is the digest of everything a launch is made of: two creates
// with the same key would start the same harness the same way.
func shapeKey(rec sessionRecord, lo launchOpts) string {
	env := make([]string, 0, len(lo.env))
	for k, v := range lo.env {
		if k == harness.HookTokenEnv {
			continue // never passed on (startGeneration)
		}
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	b, _ := json.Marshal(struct {
		Harness, Cwd, Model, Effort string
		Options                     []string
		AutoApprove                 bool
		Rows, Cols                  int
		Env                         []string
	}{rec.Harness, rec.Cwd, rec.Model, rec.Effort, rec.HarnessOptions, rec.AutoApprove, lo.rows, lo.cols, env})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// sessionWarm keeps p.Spares spares of p's launch shape.
func (rt *runtime) sessionWarm(ctx context.Context, peer rpc.Peer, p rpc.SessionWarmParams) (rpc.SessionWarmResult, error) {
	h, err := rt.catalog.Get(p.Harness)
	if err != nil {
		return rpc.SessionWarmResult{}, err
	}
	if err := validateLaunch(h, p.HarnessOptions, p.Environment, p.Cwd); err != nil {
		return rpc.SessionWarmResult{}, err
	}
	if p.Spares > 0 {
		if err := signInCheck(h, p.Environment, p.Cwd); err != nil {
			return rpc.SessionWarmResult{}, err
		}
	}
	rows, cols, err := validateSize(p.Rows, p.Cols)
	if err != nil {
		return rpc.SessionWarmResult{}, err
	}
	if p.Spares < 0 || p.Spares > maxSparesPerShape {
		return rpc.SessionWarmResult{}, rpc.InvalidField("spares", "must be 0 to %d", maxSparesPerShape)
	}
	idle := defaultSpareIdle
	if p.IdleMS < 0 || time.Duration(p.IdleMS)*time.Millisecond > maxSpareIdle {
		return rpc.SessionWarmResult{}, rpc.InvalidField("idle_ms", "must be 0 (the default, %s) to %d", defaultSpareIdle, maxSpareIdle.Milliseconds())
	}
	if p.IdleMS > 0 {
		idle = time.Duration(p.IdleMS) * time.Millisecond
	}
	rec := sessionRecord{
		Harness: h.Name(), Cwd: p.Cwd, Model: p.Model, Effort: p.Effort,
		HarnessOptions: p.HarnessOptions, AutoApprove: p.AutoApprove == nil || *p.AutoApprove,
		Rows: rows, Cols: cols,
	}
	lo := launchOpts{env: p.Environment, rows: rows, cols: cols, timeout: defaultStartupTimeout}
	key := shapeKey(rec, lo)

	rt.mu.Lock()
	closing := rt.closing
	rt.mu.Unlock()
	if closing {
		return rpc.SessionWarmResult{}, rpc.Errorf(rpc.CodeRPCUnavailable, "the daemon is shutting down")
	}
	held, err := rt.spares.Warm(key, h.Name(), p.Spares, idle, &spareShape{rt: rt, rec: rec, lo: lo})
	if err != nil {
		return rpc.SessionWarmResult{}, err
	}
	res := rpc.SessionWarmResult{Shape: key, Spares: p.Spares, IdleMS: idle.Milliseconds(), LastError: held.LastErr, Ready: len(held.Ready), Starting: held.Starting}
	for _, sp := range held.Ready { // their pids outside the pool's lock: s.mu comes first
		if pid := sp.pid(); pid > 0 {
			res.Pids = append(res.Pids, pid)
		}
	}
	res.RSSBytes = groupsRSS(res.Pids)
	return res, nil
}

// groupsRSS is the resident memory, in bytes, of the process groups
// pids lead (a spare's harness and what it started).
func groupsRSS(pids []int) int64 {
	var sum int64
	for _, pid := range pids {
		if kb, err := procmem.GroupRSS(pid); err == nil {
			sum += kb << 10
		}
	}
	return sum
}

// sparesRSS is groupsRSS of spares' harnesses.
func sparesRSS(list []*spare) int64 {
	pids := make([]int, 0, len(list))
	for _, sp := range list {
		if pid := sp.pid(); pid > 0 {
			pids = append(pids, pid)
		}
	}
	return groupsRSS(pids)
}

// pid is the spare's harness process id (0 when it has none).
func (sp *spare) pid() int {
	sp.s.mu.Lock()
	defer sp.s.mu.Unlock()
	if sp.s.gen == nil || sp.s.gen.proc == nil {
		return 0
	}
	return sp.s.gen.proc.Pid()
}

// Make makes a spare's session object (spares.Launcher): a Session
// record of the shape, outside the daemon's Sessions.
func (sh *spareShape) Make(handle *spares.Spare[*spare]) (*spare, error) {
	t := sh.rec
	s, err := sh.rt.newSessionObject(sessionRecord{
		UID: newUID(), Harness: t.Harness, Cwd: t.Cwd, Model: t.Model, Effort: t.Effort,
		HarnessOptions: slices.Clone(t.HarnessOptions), AutoApprove: t.AutoApprove,
		State: rpc.StateStarting, CreatedAtMS: nowMS(), Epoch: 1, Rows: t.Rows, Cols: t.Cols,
	})
	if err != nil {
		return nil, err
	}
	s.spare = handle
	return &spare{s: s}, nil
}

// Launch starts sp's harness and returns once it can take its first
// prompt (spares.Launcher).
func (sh *spareShape) Launch(ctx context.Context, sp *spare) error {
	rt, s, lo := sh.rt, sp.s, sh.lo
	env := map[string]string{}
	for k, v := range lo.env {
		env[k] = v
	}
	for k, v := range rt.opts.BinEnv {
		if _, ok := env[k]; !ok && v != "" {
			env[k] = v
		}
	}
	if bin, err := s.h.Binary(env); err == nil {
		sp.bin = identify(bin)
	}
	_, prompter := s.h.(harness.LaunchPrompter)
	lo.env, lo.spawnOnly = env, prompter // each launch its own map: startGeneration edits it
	g, err := rt.startGeneration(ctx, s, lo)
	if err == nil && prompter {
		// Nothing reports before the first turn: ready once the TUI
		// takes a paste, as delivery would wait for.
		_, err = s.deliveryTarget(g, rt.log, g.proc.Write).Await(ctx, harness.Await{PasteMode: true, Timeout: lo.timeout}, 0, 0)
		if err == nil && !g.out.State().PasteMode {
			err = fmt.Errorf("the harness did not turn bracketed paste on within %s", lo.timeout)
		}
		// A TUI that takes a paste before it can run a turn (Codex):
		// ready once it can (harness.SpareReadier).
		if r, ok := s.h.(harness.SpareReadier); ok && err == nil {
			_, err = s.deliveryTarget(g, rt.log, g.proc.Write).Await(ctx, r.SpareReady(), 0, 0)
		}
	}
	return err
}

// Unfit says why sp must not become a Session, or "" (spares.Launcher).
func (sh *spareShape) Unfit(sp *spare) string { return sp.unfit() }

// Retire stops sp and deletes what it wrote (spares.Launcher).
func (sh *spareShape) Retire(sp *spare) { sh.rt.retireSpare(sp) }

// spareExited hands the pool the exit of a spare's harness that nobody
// asked for: the spare goes and another takes its place.
func (rt *runtime) spareExited(handle *spares.Spare[*spare], g *generation) {
	rt.spares.Exited(handle, "a spare's harness exited: "+g.exit.String(), func() { rt.dropSpareData(handle.Item.s) })
}

// retireSpare stops a spare that left its pool (or never entered one)
// and deletes everything it wrote.
func (rt *runtime) retireSpare(sp *spare) {
	s := sp.s
	s.mu.Lock()
	g := s.gen
	rt.abandonStateLocked(s) // its exit is expected: see generationExited
	s.mu.Unlock()
	if g != nil {
		g.proc.Terminate(rt.opts.StopGrace)
		<-g.exited
	}
	rt.dropSpareData(s)
}

// dropSpareData deletes what a spare's session object wrote: its rows,
// raw log and launch directory.
func (rt *runtime) dropSpareData(s *session) {
	s.raw.Close()
	if err := store.RemoveRawLog(rt.paths.RawDir, s.uid); err != nil {
		rt.log.Warn("removing a spare's raw log", "uid", s.uid, "err", err)
	}
	if err := rt.db.DeleteSession(s.uid); err != nil {
		rt.log.Warn("removing a spare's rows", "uid", s.uid, "err", err)
	}
	os.RemoveAll(filepath.Join(rt.paths.DataDir, "launch", s.uid))
}

// claimSpare takes a ready spare of the shape rec and lo make, or
// returns nil (the create starts cold). A spare whose harness exited, or
// whose binary changed since it started, is retired instead. The pool
// starts a replacement spares.RefillDelay later.
func (rt *runtime) claimSpare(rec sessionRecord, lo launchOpts) *spare {
	rt.mu.Lock()
	closing := rt.closing
	rt.mu.Unlock()
	if closing {
		return nil
	}
	key := shapeKey(rec, lo)
	sp, ok := rt.spares.Claim(key)
	if !ok {
		return nil
	}
	rt.log.Info("a create claimed a warm spare", "shape", key, "uid", sp.s.uid)
	if spareClaimed != nil {
		spareClaimed(sp.s.uid)
	}
	return sp
}

// unfit says why sp must not become a Session, or "".
func (sp *spare) unfit() string {
	s := sp.s
	s.mu.Lock()
	g := s.gen
	s.mu.Unlock()
	if g == nil {
		return "its harness exited"
	}
	select {
	case <-g.exited:
		return "its harness exited"
	default:
	}
	if g.proc != nil && g.proc.Ended() {
		// Exited, and not yet seen by the daemon (its reaper or the
		// generation's end still to come).
		return "its harness exited"
	}
	if sp.bin.path == "" {
		return "its harness binary is unknown"
	}
	if now := identify(sp.bin.path); now != sp.bin {
		return "its harness binary changed since it started (" + sp.bin.path + ")"
	}
	return ""
}

// spareEvidenceLocked applies a hook to a warm spare: its ready evidence
// makes it ready (the id it names is kept), and nothing else moves it.
// s.mu held.
func spareEvidenceLocked(s *session, g *generation, ev harness.Evidence) bool {
	if ev.Kind != harness.KindReady || s.rec.State != stStarting || ev.ProviderID == "" {
		return false
	}
	if s.rec.ProviderID != "" && ev.ProviderID != s.rec.ProviderID {
		return false
	}
	s.rec.ProviderID = ev.ProviderID
	g.markReady()
	return true
}

// createFromSpare makes the claimed spare sp the Session of a create: it
// does what a cold launch's ready evidence does (bind the id, announcing
// session.created, and session.ready), then accepts the prompt. For a
// harness that reports nothing before its first turn the prompt is typed
// and the first turn's SessionStart binds the Session, as a launch
// prompt's does. s is registered (alias, sessions); on failure the
// caller is told nothing was created, as for a cold launch.
func (rt *runtime) createFromSpare(ctx context.Context, sp *spare, lo launchOpts, prompt string) (*receipts.Stored, error) {
	s := sp.s
	s.mu.Lock()
	s.spare = nil
	s.rec.Warm = true
	g := s.gen
	if g == nil || s.rec.State != stStarting {
		s.mu.Unlock()
		rt.discardSpare(sp)
		return nil, &rpc.Error{Code: rpc.CodeLaunchFailed, Message: "the harness exited right after starting"}
	}
	if _, ok := s.h.(harness.LaunchPrompter); ok {
		s.mu.Unlock()
		e, cursor := rt.beginLaunchExec(s, prompt, true)
		if err := s.deliver(ctx, rt.log, g, s.h.Submit(prompt)); err != nil {
			rt.log.Warn("prompt delivery failed", "launch", g.launchID, "err", err)
		}
		if err := rt.awaitReady(ctx, s, g, lo.timeout); err != nil {
			rt.discardSpare(sp)
			return nil, err
		}
		return rt.awaitReceipt(ctx, s, e, cursor), nil
	}
	rt.bindLocked(s)
	rt.transitionLocked(s, stIdle, rpc.Event{Type: rpc.EventSessionReady})
	s.mu.Unlock()
	return rt.acceptFirst(ctx, s, g, prompt)
}

// discardSpare forgets a claimed spare whose create failed before its
// Session was bound: its process is stopped and its data deleted.
func (rt *runtime) discardSpare(sp *spare) {
	rt.discard(sp.s)
	rt.retireSpare(sp)
}

// sweepOrphans deletes what launches that never became Sessions left
// behind when the daemon was killed: a warm spare's (or a launch's)
// rows, raw log and launch directory. It runs once, at start, after
// recover has loaded every Session. Best effort: what cannot be deleted
// is logged.
func (rt *runtime) sweepOrphans() {
	rt.mu.Lock()
	known := func(uid string) bool { return rt.sessions[uid] != nil }
	defer rt.mu.Unlock()
	uids, err := rt.db.Orphans()
	if err != nil {
		rt.log.Warn("listing orphaned rows", "err", err)
	}
	for _, uid := range uids {
		if !known(uid) {
			if err := rt.db.DeleteSession(uid); err != nil {
				rt.log.Warn("deleting orphaned rows", "uid", uid, "err", err)
			}
		}
	}
	if ents, err := os.ReadDir(filepath.Join(rt.paths.DataDir, "launch")); err == nil {
		for _, e := range ents {
			if !known(e.Name()) {
				os.RemoveAll(filepath.Join(rt.paths.DataDir, "launch", e.Name()))
			}
		}
	}
	if ents, err := os.ReadDir(rt.paths.RawDir); err == nil {
		gone := map[string]bool{}
		for _, e := range ents {
			uid, _, ok := strings.Cut(e.Name(), ".")
			if ok && !known(uid) && !gone[uid] {
				gone[uid] = true
				store.RemoveRawLog(rt.paths.RawDir, uid)
			}
		}
	}
}

// launchPromptFits reports whether a cold launch of h would take prompt:
// a prompt a LaunchPrompter refuses (too long for Codex's command line)
// must get the cold create's error, not a spare that would type it.
func launchPromptFits(h harness.Harness, prompt string) bool {
	lp, ok := h.(harness.LaunchPrompter)
	return !ok || lp.LaunchPrompt(prompt) == nil
}
