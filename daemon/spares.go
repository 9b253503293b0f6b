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
// runs a create from a client that sent the same environment. Spares are
// bounded (maxSparesPerShape, maxSparesTotal), stopped when their shape
// is idle for its idle time, when they die (replaced, at most
// maxSpareFailures launches in a row), when the daemon stops, and never
// handed out if their harness binary changed since they started; rows a
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
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/procmem"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

const (
	maxSparesPerShape = 4
	maxSparesTotal    = 8
	defaultSpareIdle  = 10 * time.Minute
	maxSpareIdle      = 24 * time.Hour
	// maxSpareFailures stops refilling a shape whose spare launches
	// failed this many times in a row (a missing binary, a sign-in
	// screen): a broken shape must not relaunch forever.
	maxSpareFailures = 3
)

// spareClaimed, when set (by the tests), is told of every spare a create
// claims.
var spareClaimed func(uid string)

// spareStats counts, for daemon status, the creates that could have run
// on a spare while the daemon kept some (no worktree; a prompt a spare
// can take): claims took one; misses found their shape's spares all
// still starting; shapeMisses found spares of other shapes only: another
// environment (a spare warmed from another shell), directory, model,
// effort or options.
type spareStats struct {
	claims, misses, shapeMisses uint64
}

// spare is one warm harness process of a pool.
type spare struct {
	s    *session
	pool *sparePool
	// ready: the harness can take its first prompt (rt.mu).
	ready bool
	// bin is the harness binary as it was when the spare started.
	bin fileIdentity
	// ctx ends the launch of a spare taken out of its pool before it was
	// ready: launchSpare then retires it.
	ctx    context.Context
	cancel context.CancelFunc
}

// sparePool is one launch shape's spares (rt.mu guards every field).
type sparePool struct {
	key      string
	rec      sessionRecord // the shape's record fields; a template
	lo       launchOpts
	want     int
	idle     time.Duration
	lastUse  time.Time
	spares   []*spare
	failures int
	// refillAt holds replacements back until then (after a claim: see
	// spareRefillDelay).
	refillAt time.Time
	lastErr  string
	expire   *time.Timer
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
	h, err := rt.harness(p.Harness)
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
	if rt.closing {
		rt.mu.Unlock()
		return rpc.SessionWarmResult{}, rpc.Errorf(rpc.CodeRPCUnavailable, "the daemon is shutting down")
	}
	pool := rt.pools[key]
	others := 0
	for k, q := range rt.pools {
		if k != key {
			others += q.want
		}
	}
	if others+p.Spares > maxSparesTotal {
		rt.mu.Unlock()
		return rpc.SessionWarmResult{}, rpc.InvalidField("spares", "the daemon keeps at most %d spares in all and %d are kept for other launch shapes", maxSparesTotal, others)
	}
	var retire []*spare
	if pool == nil && p.Spares > 0 {
		pool = &sparePool{key: key, rec: rec, lo: lo}
		rt.pools[key] = pool
	}
	if pool != nil {
		pool.want, pool.idle, pool.lastUse = p.Spares, idle, time.Now()
		pool.failures, pool.lastErr = 0, ""
		for len(pool.spares) > pool.want {
			retire = append(retire, pool.spares[len(pool.spares)-1])
			pool.spares = pool.spares[:len(pool.spares)-1]
		}
		if pool.want == 0 {
			rt.dropPoolLocked(pool)
		} else {
			rt.armExpiryLocked(pool)
			rt.fillPoolLocked(pool)
		}
	}
	res := rpc.SessionWarmResult{Shape: key, Spares: p.Spares, IdleMS: idle.Milliseconds()}
	var ready []*spare
	if pool != nil {
		res.LastError = pool.lastErr
		for _, sp := range pool.spares {
			if sp.ready {
				res.Ready++
				ready = append(ready, sp) // their pids outside rt.mu: s.mu comes first
			} else {
				res.Starting++
			}
		}
	}
	rt.mu.Unlock()
	rt.releaseSpares(retire)
	for _, sp := range ready {
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
func sparesRSS(spares []*spare) int64 {
	pids := make([]int, 0, len(spares))
	for _, sp := range spares {
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

// dropPoolLocked forgets pool; its spares must already be out of it or
// be retired by the caller. rt.mu held.
func (rt *runtime) dropPoolLocked(pool *sparePool) {
	if pool.expire != nil {
		pool.expire.Stop()
	}
	if rt.pools[pool.key] == pool {
		delete(rt.pools, pool.key)
	}
}

// armExpiryLocked (re)starts pool's idle timer. rt.mu held.
func (rt *runtime) armExpiryLocked(pool *sparePool) {
	if pool.expire != nil {
		pool.expire.Stop()
	}
	pool.expire = time.AfterFunc(pool.idle, func() { rt.expirePool(pool) })
}

// expirePool stops the spares of a pool unused for its idle time.
func (rt *runtime) expirePool(pool *sparePool) {
	rt.mu.Lock()
	if rt.pools[pool.key] != pool {
		rt.mu.Unlock()
		return
	}
	if left := pool.idle - time.Since(pool.lastUse); left > 0 {
		pool.expire = time.AfterFunc(left, func() { rt.expirePool(pool) })
		rt.mu.Unlock()
		return
	}
	spares := pool.spares
	pool.spares = nil
	rt.dropPoolLocked(pool)
	rt.mu.Unlock()
	rt.log.Info("warm spares expired", "shape", pool.key, "harness", pool.rec.Harness, "spares", len(spares))
	rt.releaseSpares(spares)
}

// releaseSpares stops spares taken out of their pool: a ready one is
// retired here, one still starting has its launch canceled and
// launchSpare retires it. Each decided under rt.mu when it was taken
// out: readiness is set under rt.mu and only while the spare is held.
func (rt *runtime) releaseSpares(spares []*spare) {
	done := make(chan struct{}, len(spares))
	n := 0
	for _, sp := range spares {
		rt.mu.Lock()
		ready := sp.ready
		rt.mu.Unlock()
		if !ready {
			sp.cancel()
			continue
		}
		n++
		go func() {
			rt.retireSpare(sp)
			done <- struct{}{}
		}()
	}
	for range n {
		<-done
	}
}

// sparesTotalLocked counts every spare held. rt.mu held.
func (rt *runtime) sparesTotalLocked() int {
	n := 0
	for _, q := range rt.pools {
		n += len(q.spares)
	}
	return n
}

// fillPoolLocked starts spares until pool has what it wants, unless a
// claim holds replacements back (refillAt). rt.mu held.
func (rt *runtime) fillPoolLocked(pool *sparePool) {
	if time.Now().Before(pool.refillAt) {
		return
	}
	for len(pool.spares) < pool.want && pool.failures < maxSpareFailures &&
		rt.sparesTotalLocked() < maxSparesTotal && !rt.closing {
		t := pool.rec
		s, err := rt.newSessionObject(sessionRecord{
			UID: newUID(), Harness: t.Harness, Cwd: t.Cwd, Model: t.Model, Effort: t.Effort,
			HarnessOptions: slices.Clone(t.HarnessOptions), AutoApprove: t.AutoApprove,
			State: rpc.StateStarting, CreatedAtMS: nowMS(), Epoch: 1, Rows: t.Rows, Cols: t.Cols,
		})
		if err != nil {
			pool.failures++
			pool.lastErr = err.Error()
			rt.log.Warn("a warm spare could not be made", "shape", pool.key, "err", err)
			return
		}
		sp := &spare{s: s, pool: pool}
		sp.ctx, sp.cancel = context.WithCancel(context.Background())
		s.spare = sp
		pool.spares = append(pool.spares, sp)
		rt.wg.Add(1)
		go func() {
			defer rt.wg.Done()
			rt.launchSpare(sp)
		}()
	}
}

// launchSpare starts sp's harness and marks it ready, or gives it up.
func (rt *runtime) launchSpare(sp *spare) {
	s, pool := sp.s, sp.pool
	lo := pool.lo
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
	defer sp.cancel()
	g, err := rt.startGeneration(sp.ctx, s, lo)
	if err == nil && prompter {
		// Nothing reports before the first turn: ready once the TUI
		// takes a paste, as delivery would wait for.
		_, err = rt.awaitEvidence(sp.ctx, s, g, harness.Await{PasteMode: true, Timeout: lo.timeout}, 0, 0)
		if err == nil && !g.out.state().pasteMode {
			err = fmt.Errorf("the harness did not turn bracketed paste on within %s", lo.timeout)
		}
		// A TUI that takes a paste before it can run a turn (Codex):
		// ready once it can (harness.SpareReadier).
		if r, ok := s.h.(harness.SpareReadier); ok && err == nil {
			_, err = rt.awaitEvidence(sp.ctx, s, g, r.SpareReady(), 0, 0)
		}
	}
	rt.mu.Lock()
	held := slices.Contains(pool.spares, sp)
	if err != nil {
		pool.failures++
		pool.lastErr = err.Error()
		if held {
			pool.spares = slices.DeleteFunc(pool.spares, func(x *spare) bool { return x == sp })
		}
	} else if held {
		sp.ready = true
		pool.failures = 0
	}
	rt.mu.Unlock()
	if err != nil {
		rt.log.Warn("a warm spare did not start", "shape", pool.key, "harness", pool.rec.Harness, "err", err)
	}
	if err != nil || !held {
		// Failed, or retired (expired, stopped) while it started.
		rt.retireSpare(sp)
	}
}

// spareExited handles the exit of a spare's harness that nobody asked
// for: the spare goes and another takes its place.
func (rt *runtime) spareExited(sp *spare, g *generation) {
	rt.mu.Lock()
	pool := sp.pool
	// One not ready yet is launchSpare's to give up; one out of its pool
	// is being retired or claimed, and that path cleans up.
	held := sp.ready && slices.Contains(pool.spares, sp)
	if held {
		pool.spares = slices.DeleteFunc(pool.spares, func(x *spare) bool { return x == sp })
		pool.failures++
		pool.lastErr = "a spare's harness exited: " + g.exit.String()
	}
	rt.mu.Unlock()
	if !held {
		return
	}
	rt.log.Warn("a warm spare's harness exited", "shape", pool.key, "exit", g.exit.String())
	rt.dropSpareData(sp.s)
	rt.mu.Lock()
	if rt.pools[pool.key] == pool {
		rt.fillPoolLocked(pool)
	}
	rt.mu.Unlock()
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
// starts a replacement at once.
func (rt *runtime) claimSpare(rec sessionRecord, lo launchOpts) *spare {
	key := shapeKey(rec, lo)
	for {
		rt.mu.Lock()
		pool := rt.pools[key]
		if pool == nil || rt.closing {
			if pool == nil && len(rt.pools) > 0 {
				rt.spareStats.shapeMisses++
			}
			rt.mu.Unlock()
			return nil
		}
		pool.lastUse = time.Now()
		i := slices.IndexFunc(pool.spares, func(sp *spare) bool { return sp.ready })
		if i < 0 {
			rt.spareStats.misses++
			rt.mu.Unlock()
			return nil
		}
		sp := pool.spares[i]
		pool.spares = slices.Delete(pool.spares, i, i+1)
		rt.refillLaterLocked(pool)
		rt.mu.Unlock()
		if why := sp.unfit(); why != "" {
			rt.log.Info("a warm spare was not handed out", "shape", key, "why", why)
			rt.retireSpare(sp)
			continue
		}
		rt.mu.Lock()
		rt.spareStats.claims++
		rt.mu.Unlock()
		rt.log.Info("a create claimed a warm spare", "shape", key, "uid", sp.s.uid)
		if spareClaimed != nil {
			spareClaimed(sp.s.uid)
		}
		return sp
	}
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

// closeSpares retires every spare (daemon shutdown). rt.closing is set.
func (rt *runtime) closeSpares() {
	rt.mu.Lock()
	var all []*spare
	for _, pool := range rt.pools {
		all = append(all, pool.spares...)
		pool.spares = nil
		rt.dropPoolLocked(pool)
	}
	rt.mu.Unlock()
	rt.releaseSpares(all)
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
		if err := rt.deliver(ctx, s, g, s.h.Submit(prompt)); err != nil {
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

// spareRefillDelay is how long a claim holds back the replacement of the
// spare it took. A harness starting takes the CPU for about a second; on
// a small machine, started at the claim, it slowed the claimed Session's
// first turn (Claude Code's prompt to first model request by 100-150 ms,
// Gemini CLI's by about 50 ms, on 2 cores), which is the latency a spare
// is there to save. A create right after a claim finds no spare either
// way: a replacement is not ready in less than this.
const spareRefillDelay = 2 * time.Second

// refillLaterLocked starts pool's replacements spareRefillDelay from now.
// rt.mu held.
func (rt *runtime) refillLaterLocked(pool *sparePool) {
	pool.refillAt = time.Now().Add(spareRefillDelay)
	time.AfterFunc(spareRefillDelay, func() {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if rt.pools[pool.key] == pool {
			rt.fillPoolLocked(pool)
		}
	})
}
