package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/approvals"
	"github.com/dlgt-dev/dlgt/daemon/catalog"
	"github.com/dlgt-dev/dlgt/daemon/hookhttp"
	"github.com/dlgt-dev/dlgt/daemon/receipts"
	"github.com/dlgt-dev/dlgt/daemon/spares"
	"github.com/dlgt-dev/dlgt/daemon/toolcalls"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
	"github.com/dlgt-dev/dlgt/store"
)

// Options tune the runtime. Zero values take defaults.
type Options struct {
	// BinEnv are defaults for the harnesses' binary variables
	// (harness.Descriptor.BinEnv, e.g. DLGT_CODEX_BIN=/opt/codex) when the
	// client environment names none.
	BinEnv map[string]string
	// HookCommand is the argv prefix injected harness hooks run to reach
	// the daemon; default: this executable's hidden "hook" command.
	HookCommand []string
	// HTTPHooks serves an HTTP hook endpoint on 127.0.0.1 that harnesses
	// able to post hooks (Claude Code) use instead of the forwarder
	// command (see hookhttp.go). Off by default: the daemon then listens
	// on its Unix sockets only.
	HTTPHooks bool
	// Harnesses replaces the built-in adapters (tests).
	Harnesses map[string]harness.Harness
	// SubmitWait bounds the wait for the provider's acknowledgement of a
	// prompt before a receipt says "pending" (default 5s).
	SubmitWait time.Duration
	// StopGrace is how long a stopping harness gets between SIGTERM and
	// SIGKILL (default 5s).
	StopGrace time.Duration
}

func (o Options) withDefaults() Options {
	if o.SubmitWait <= 0 {
		o.SubmitWait = 5 * time.Second
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 5 * time.Second
	}
	if o.Harnesses == nil {
		o.Harnesses = map[string]harness.Harness{}
		for _, d := range harness.All() {
			o.Harnesses[d.Name] = d.Harness
		}
	}
	if len(o.HookCommand) == 0 {
		if exe, err := os.Executable(); err == nil {
			o.HookCommand = []string{exe, "hook"}
		}
	}
	return o
}

// runtime owns the daemon's Sessions and answers RPCs.
type runtime struct {
	db         *store.DB
	paths      statedir.Paths
	log        *slog.Logger
	opts       Options
	methodOf   map[string]method // built once: see methods
	instanceID string
	startedAt  time.Time
	receipts   *receipts.Table
	// responses are session.respond's answers by request_id, and
	// respondMu serialises the responses (pending.go).
	responses approvals.Responses
	respondMu sync.Mutex
	positions *fetchPositions
	fetch     *fetcher         // session.fetch (fetch.go)
	terminals *terminals       // internal.terminal.* (attach.go)
	hooks     *hookIntake      // internal.hook and the HTTP intake (evidence.go)
	worktrees *worktrees       // where worktrees go, session.diff (worktree.go)
	catalog   *catalog.Catalog // the harnesses, harness.list, model.list
	tools     toolcalls.Log    // tool.call events (toolevents.go)

	shutdown func()
	server   *rpc.Server
	hookWeb  *hookhttp.Server // nil: command hooks only

	// mu guards the fields that follow.
	mu       sync.Mutex
	sessions map[string]*session // by internal uid
	byID     map[string]*session // by provider-qualified id
	byLaunch map[string]*session // by launch id of the live generation
	aliases  map[string]*session // active aliases
	// allChanged is closed and replaced on any change (all:true waiters,
	// event subscribers).
	allChanged chan struct{}
	// sessionsGen counts changes of sessions; statefulCache is the
	// all:true Session list built at one of them (fetch_all.go).
	sessionsGen   uint64
	statefulCache statefulCache
	closing       bool
	// spares are the warm spares, by launch shape (spares.go, package
	// spares).
	spares *sparePool
	wg     sync.WaitGroup // process pumps and launches
	// retrying is set while retryLoop runs (storage.go).
	retrying atomic.Bool
}

func newRuntime(db *store.DB, p statedir.Paths, log *slog.Logger, opts Options) (*runtime, error) {
	rt := &runtime{
		db: db, paths: p, log: log, opts: opts.withDefaults(),
		instanceID: newInstanceID(), startedAt: time.Now(),
		sessions: map[string]*session{}, byID: map[string]*session{},
		byLaunch: map[string]*session{}, aliases: map[string]*session{},
		allChanged: make(chan struct{}),
	}
	rt.fetch = &fetcher{host: rt, db: db, instanceID: rt.instanceID}
	rt.catalog = catalog.New(rt.opts.Harnesses, rt.opts.BinEnv)
	rt.terminals = &terminals{host: rt, log: log}
	rt.worktrees = newWorktrees(rt)
	rt.hooks = newHookIntake(rt)
	rt.spares = spares.New[*spare](spares.Config{Log: log, Go: func(f func()) {
		rt.wg.Add(1)
		go func() {
			defer rt.wg.Done()
			f()
		}()
	}})
	rt.methodOf = rt.methods()
	rt.receipts = receipts.New(db)
	rt.receipts.Recorded = rt.executionRecorded
	rt.positions = newPositions(db, log)
	rt.fetch.positions = rt.positions
	rt.receipts.PositionOf = rt.receiptPosition
	db.SetCommitHook(rt.rowsCommitted)
	if err := rt.recover(); err != nil {
		return nil, err
	}
	rt.sweepOrphans()
	if err := rt.positions.Load(func(uid string) bool {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return rt.sessions[uid] != nil
	}); err != nil {
		return nil, err
	}
	return rt, nil
}

// recover loads every persisted Session. A Session that was not terminal
// when the previous daemon died is marked failed, and its active
// execution gets a retained interrupted result.
func (rt *runtime) recover() error {
	recs, err := rt.db.ListSessions()
	if err != nil {
		return err
	}
	for _, r := range recs {
		var rec sessionRecord
		if err := json.Unmarshal(r.Data, &rec); err != nil {
			rt.log.Error("skipping unreadable session record", "uid", r.Key, "err", err)
			continue
		}
		s, err := rt.newSessionObject(rec)
		if err != nil {
			return err
		}
		for after := uint64(0); ; {
			evs, err := rt.db.ReadEvents(after, 1024, s.uid)
			if err != nil || len(evs) == 0 {
				break
			}
			after = evs[len(evs)-1].Seq
			s.lastEvent = after
			for _, e := range evs {
				s.events.Note(e.Seq, rt.db.EventsEvictedThrough())
			}
		}
		rt.mu.Lock()
		rt.holdSessionLocked(s)
		if rec.ID != "" {
			rt.byID[rec.ID] = s
		}
		rt.mu.Unlock()
		if u, ok := s.h.(unknownHarness); ok {
			// Never run it as some other harness: fail it, saying why.
			rt.log.Error("a stored Session's harness is unknown; the Session is failed", "session", rec.ID, "err", u.err)
			if rec.State != rpc.StateFailed {
				s.mu.Lock()
				rt.failLocked(s, "unknown_harness", u.err.Error()+": this daemon cannot run the Session")
				s.mu.Unlock()
			}
		} else if !terminal(rec.State) {
			s.mu.Lock()
			rt.failLocked(s, "daemon_restarted", "the daemon exited while this Session was "+string(rec.State))
			s.mu.Unlock()
		}
	}
	return nil
}

func (rt *runtime) newSessionObject(rec sessionRecord) (*session, error) {
	h := adapterFor(rt.catalog, rec.Harness)
	rows, err := rt.db.Rows(rec.UID)
	if err != nil {
		return nil, err
	}
	raw, err := store.OpenRawLog(rt.paths.RawDir, rec.UID, rawLogCap)
	if err != nil {
		return nil, err
	}
	if rec.UpdatedAtMS == 0 {
		rec.UpdatedAtMS = rec.CreatedAtMS // a new record, not saved yet
	}
	return &session{uid: rec.UID, h: h, rows: rows, raw: raw, rec: rec, changed: make(chan struct{})}, nil
}

// executionRecorded reports whether the execution a provisional receipt
// names exists on its Session.
func (rt *runtime) executionRecorded(st *receipts.Stored) bool {
	rt.mu.Lock()
	s := rt.sessions[st.SessionUID]
	rt.mu.Unlock()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.LastExecSeq >= st.Receipt.ExecutionSeq
}

// rawLogCap bounds each Session's raw PTY log.
const rawLogCap = 64 << 20

// close stops every Session's harness (graceful shutdown): active work
// gets an interrupted result and every Session is marked stopped.
func (rt *runtime) close() {
	rt.mu.Lock()
	rt.closing = true
	all := make([]*session, 0, len(rt.sessions))
	for _, s := range rt.sessions {
		all = append(all, s)
	}
	rt.mu.Unlock()
	rt.spares.Stop()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rt.stopSession(s, false, "daemon_shutdown")
		}()
	}
	wg.Wait()
	rt.wg.Wait()
	for _, s := range all {
		s.rows.Flush()
		s.raw.Close()
	}
	rt.positions.Close()
}

// receiptPosition is the stored form of a receipt's cursor, which the
// receipt's own write carries: a receipt replayed after any restart
// names the same window.
func (rt *runtime) receiptPosition(st *receipts.Stored) (store.Position, bool) {
	n, err := strconv.ParseUint(st.Receipt.Cursor, 10, 64)
	if err != nil || st.SessionUID == "" {
		return store.Position{}, false
	}
	return rt.positions.Stored(st.SessionUID, n)
}

// notifyAllLocked wakes all:true waiters and event subscribers. rt.mu held.
func (rt *runtime) notifyAllLocked() {
	close(rt.allChanged)
	rt.allChanged = make(chan struct{})
}

func (rt *runtime) notifyAll() {
	rt.mu.Lock()
	rt.notifyAllLocked()
	rt.mu.Unlock()
}

// rowsCommitted is the store's commit hook: rows became visible.
func (rt *runtime) rowsCommitted(uid string, _ uint64) {
	rt.mu.Lock()
	s := rt.sessions[uid]
	rt.notifyAllLocked()
	rt.mu.Unlock()
	if s != nil {
		s.mu.Lock()
		s.notifyLocked()
		s.mu.Unlock()
	}
}

// resolve finds a Session by provider-qualified id or active alias.
func (rt *runtime) resolve(ref string) (*session, error) {
	return rt.resolveRef(ref, false)
}

// resolveLast is resolve for the calls that read a Session or clean up
// after it (session.read, session.diff, session.stop, scrollback.read,
// transcript.read_raw): an alias no active Session holds names the
// stopped or failed Session it last named, so stop, review, remove works
// by alias. An active Session's alias still wins.
func (rt *runtime) resolveLast(ref string) (*session, error) {
	return rt.resolveRef(ref, true)
}

func (rt *runtime) resolveRef(ref string, last bool) (*session, error) {
	if ref == "" {
		return nil, rpc.InvalidField("session", "must not be empty")
	}
	alias := normalizeAlias(ref)
	rt.mu.Lock()
	if s, ok := rt.byID[ref]; ok {
		rt.mu.Unlock()
		return s, nil
	}
	if s, ok := rt.aliases[alias]; ok {
		rt.mu.Unlock()
		return s, nil
	}
	all := make([]*session, 0, len(rt.sessions))
	for _, s := range rt.sessions {
		all = append(all, s)
	}
	// Aliases a person may have meant: the ones dlgt generated from a
	// title (title-xxxxxx) starting with what was typed. They are named
	// plainly, as people type them (the "@" is optional).
	var near []string
	for a := range rt.aliases {
		if strings.HasPrefix(a, alias+"-") {
			near = append(near, a)
		}
	}
	rt.mu.Unlock()
	// Only an active alias addresses a Session; one that named a Session
	// now stopped or failed says which, and how to reach it.
	var lastID, lastState string
	var lastAt int64
	var lastS *session
	for _, s := range all {
		s.mu.Lock()
		if s.rec.Alias == alias && s.rec.ID != "" && (lastID == "" || s.rec.UpdatedAtMS > lastAt) {
			lastID, lastState, lastAt, lastS = s.rec.ID, string(s.rec.State), s.rec.UpdatedAtMS, s
		}
		s.mu.Unlock()
	}
	if last && lastS != nil {
		return lastS, nil
	}
	if lastID != "" {
		// The alias as the client sent it ("cl" or "@cl"), not rewritten.
		return nil, &rpc.Error{Code: rpc.CodeNotFound, Message: fmt.Sprintf(
			"no active Session has the alias %q; it last named %s, now %s: address that Session by its ID, or resume it (dlgt session send %s --resume)",
			clipRef(ref), lastID, lastState, lastID)}
	}
	msg := fmt.Sprintf("no Session %q on this daemon", clipRef(ref))
	if len(near) > 0 {
		slices.Sort(near)
		if len(near) > 3 {
			near = append(near[:3], "…")
		}
		msg += "; did you mean " + strings.Join(near, ", ") + "?"
	}
	return nil, &rpc.Error{Code: rpc.CodeNotFound, Message: msg}
}

func clipRef(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func normalizeAlias(a string) string { return strings.TrimPrefix(a, "@") }

// persistLocked writes the Session record. s.mu held. A failure is
// logged; callers that acknowledge something on the strength of the
// record (accept) check the error.
func (rt *runtime) persistLocked(s *session) error {
	if s.spare != nil {
		return nil // a warm spare is not a Session yet (spares.go)
	}
	s.rec.UpdatedAtMS = nowMS()
	// A retried write stores the record as it is then.
	return rt.storeLocked(s, "session record", func(w store.Writer) error { return w.PutSession(s.uid, s.rec.marshal()) })
}

// emitLocked records a lifecycle event for s and wakes observers. s.mu held.
func (rt *runtime) emitLocked(s *session, ev rpc.Event) {
	if s.spare != nil {
		return // a warm spare is not a Session yet (spares.go)
	}
	ev.SchemaVersion = rpc.SchemaVersion
	if ev.SessionID == "" {
		ev.SessionID = s.rec.ID
	}
	rt.storeLocked(s, "event "+ev.Type, func(w store.Writer) error {
		seq, err := w.AppendEvent(s.uid, func(seq uint64) ([]byte, error) {
			ev.Seq = seq
			return rpc.Marshal(ev)
		})
		if err == nil {
			w.AfterCommit(func() {
				s.lastEvent = seq
				s.events.Note(seq, rt.db.EventsEvictedThrough())
			})
		}
		return err
	})
	rt.changedLocked(s)
}

// goTracked runs fn in a goroutine that closing the runtime waits for,
// unless it is already closing; it reports whether fn was started.
func (rt *runtime) goTracked(fn func()) bool {
	rt.mu.Lock()
	if rt.closing {
		rt.mu.Unlock()
		return false
	}
	rt.wg.Add(1)
	rt.mu.Unlock()
	go func() {
		defer rt.wg.Done()
		fn()
	}()
	return true
}

// finishExecLocked retains the terminal result of the active execution
// (exactly once) and clears it. s.mu held.
func (rt *runtime) finishExecLocked(s *session, status, text, source string, rerr *rpc.ResultError) *rpc.Result {
	e := s.exec
	if e == nil {
		return nil
	}
	usage, stop := s.execTurnLocked(e)
	res := &rpc.Result{
		ExecutionSeq: e.seq, Status: status, FinalTextSource: source,
		Error: rerr, StartedAtMS: e.startedAt.UnixMilli(), CompletedAtMS: nowMS(),
		Usage: usage, Diff: rt.worktrees.summaryLocked(s), StopReason: stop,
	}
	if status == rpc.StatusCompleted || text != "" {
		t := text
		res.FinalText = &t
	}
	if source == "" {
		res.FinalTextSource = rpc.TextSourceMissing
	}
	if e.prompt != "" {
		p := e.prompt
		res.Prompt = &p
	}
	res.ToolCalls, res.ToolCallsTruncated = e.tools.Calls()
	data, _ := rpc.Marshal(res)
	seq := e.seq
	rt.storeLocked(s, "result", func(w store.Writer) error { return w.PutResult(s.uid, seq, data) })
	e.result = res
	close(e.done)
	s.endedTurnID = e.turnID
	s.exec = nil
	s.rec.ActiveExec = nil
	return res
}

// failLocked moves s to failed: an active execution is interrupted.
func (rt *runtime) failLocked(s *session, code, msg string) {
	if s.exec == nil && s.rec.ActiveExec != nil {
		// Recovered after a crash: rebuild the execution to retain its result.
		s.exec = &execution{seq: s.rec.ActiveExec.Seq, startedAt: time.UnixMilli(s.rec.ActiveExec.StartedAtMS), done: make(chan struct{}), submitted: make(chan struct{})}
	}
	ev := rpc.Event{Type: rpc.EventSessionFailed, Reason: code}
	if s.exec != nil {
		res := rt.finishExecLocked(s, rpc.StatusInterrupted, "", rpc.TextSourceMissing, &rpc.ResultError{Code: code, Message: msg})
		ev.ExecutionSeq, ev.ResultStatus = res.ExecutionSeq, res.Status
	}
	rt.releaseAliasLocked(s)
	rt.transitionLocked(s, stFailed, ev)
}

// releaseAliasLocked frees the alias of a Session that became terminal.
func (rt *runtime) releaseAliasLocked(s *session) {
	if s.rec.Alias == "" {
		return
	}
	rt.mu.Lock()
	if rt.aliases[s.rec.Alias] == s {
		delete(rt.aliases, s.rec.Alias)
	}
	rt.mu.Unlock()
}

// holdSessionLocked adds s to the Sessions this daemon holds, and
// dropSessionLocked takes it out; both count the change (sessionsGen), so
// the all:true list built before it is not reused. rt.mu held.
func (rt *runtime) holdSessionLocked(s *session) {
	rt.sessions[s.uid] = s
	rt.sessionsGen++
}

func (rt *runtime) dropSessionLocked(s *session) {
	delete(rt.sessions, s.uid)
	rt.sessionsGen++
}

// profileList: profiles are client-side; the daemon does not reread
// mutable client configuration, so it answers with none and points at the
// proxy.
func profileList(ctx context.Context, peer rpc.Peer, p rpc.ProfileListParams) (rpc.ProfileListResult, error) {
	return rpc.ProfileListResult{}, rpc.Errorf(rpc.CodeInvalidArgument, "profile.list is answered by the client (dlgt rpc --stdio or dlgt profiles), not the daemon")
}

func (rt *runtime) daemonStatus(ctx context.Context, peer rpc.Peer, p struct{}) (rpc.DaemonStatus, error) {
	st := rpc.DaemonStatus{
		Version: statedir.Version, Commit: statedir.CommitID(), PID: os.Getpid(), InstanceID: rt.instanceID,
		Socket: rt.paths.Socket, Home: rt.paths.Home,
		UptimeMS: time.Since(rt.startedAt).Milliseconds(),
	}
	if rt.server != nil {
		st.Connections = rt.server.ConnCount()
	}
	rt.mu.Lock()
	st.Sessions = len(rt.sessions)
	rt.mu.Unlock()
	stats, held := rt.spares.Status()
	st.SpareClaims, st.SpareMisses, st.SpareShapeMisses = stats.Claims, stats.Misses, stats.ShapeMisses
	st.SparesReady, st.SparesStarting = len(held.Ready), held.Starting
	st.SparesRSSBytes = sparesRSS(held.Ready)
	return st, nil
}

func (rt *runtime) daemonShutdown(ctx context.Context, peer rpc.Peer, p struct{}) (rpc.ShutdownResult, error) {
	rt.log.Info("shutdown requested", "peer_uid", peer.UID, "peer_pid", peer.PID)
	// Answer first; stop serving just after, so the reply is flushed.
	time.AfterFunc(50*time.Millisecond, rt.shutdown)
	return rpc.ShutdownResult{Stopping: true}, nil
}
