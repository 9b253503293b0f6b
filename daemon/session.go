package daemon

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/approvals"
	"github.com/dlgt-dev/dlgt/daemon/delivery"
	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/daemon/spares"
	"github.com/dlgt-dev/dlgt/daemon/toolcalls"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/pty"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
	"github.com/dlgt-dev/dlgt/vt"
)

// sessionRecord is a Session's persisted metadata. The launch environment
// is deliberately absent: it travels in RPC memory only.
type sessionRecord struct {
	UID            string         `json:"uid"`
	ID             string         `json:"id,omitempty"`
	ProviderID     string         `json:"provider_id,omitempty"`
	Alias          string         `json:"alias,omitempty"`
	Title          string         `json:"title"`
	Harness        string         `json:"harness"`
	Cwd            string         `json:"cwd"`
	Model          string         `json:"model,omitempty"`
	Effort         string         `json:"effort,omitempty"`
	HarnessOptions []string       `json:"harness_options,omitempty"`
	AutoApprove    bool           `json:"auto_approve"`
	State          lifecycleState `json:"state"`
	CreatedAtMS    int64          `json:"created_at_ms"`
	UpdatedAtMS    int64          `json:"updated_at_ms"`
	Epoch          uint64         `json:"epoch"`
	ResetReason    string         `json:"reset_reason,omitempty"`
	LastExecSeq    uint64         `json:"last_exec_seq"`
	// ActiveExec is the execution without a terminal result, if any, so a
	// daemon that crashed can give it an interrupted result on restart.
	ActiveExec *execRecord `json:"active_exec,omitempty"`
	// FinalLive is the live grid of the last generation when it exited.
	FinalLive []string `json:"final_live,omitempty"`
	Rows      int      `json:"rows"`
	Cols      int      `json:"cols"`
	// Worktree is the git worktree the Session runs in (Cwd is inside it).
	Worktree *rpc.Worktree `json:"worktree,omitempty"`
	// Warm: its create claimed a warm spare (spares.go).
	Warm bool `json:"warm,omitempty"`
	// Queued are the sends waiting behind the active execution
	// (queue.go), stored with the record so none is lost unnoticed.
	Queued []queuedRecord `json:"queued,omitempty"`
}

type execRecord struct {
	Seq         uint64 `json:"seq"`
	StartedAtMS int64  `json:"started_at_ms"`
}

// execution is the active turn of a Session.
type execution struct {
	seq       uint64
	prompt    string
	startedAt time.Time
	// submitted is closed when the provider confirmed the prompt.
	submitted     chan struct{}
	submittedOnce sync.Once
	// done is closed when the execution has its terminal result.
	done      chan struct{}
	result    *rpc.Result
	canceling bool
	// interruptHeard: the harness took an interrupt and its turn-end
	// evidence is awaited (awaitInterruptEnd) (s.mu).
	interruptHeard bool
	// denied: a pending request of this turn was denied with the keys of
	// a harness whose deny ends the turn (harness.KeyAnswerer) (s.mu).
	denied bool
	// turnID is the provider's id for this turn, from the evidence that
	// confirmed the prompt, when it gives one (s.mu).
	turnID string
	// usagePath and usageFrom are the provider transcript and its size
	// when the execution started, if it was known then (see usage.go).
	usagePath string
	usageFrom int64
	// tools are the tool calls its result keeps (s.mu).
	tools toolcalls.Turn
}

// markReady closes g.ready once: the provider's ready evidence, or a
// warm spare's (spares.go). s.mu held by every caller.
func (g *generation) markReady() {
	select {
	case <-g.ready:
	default:
		close(g.ready)
	}
}

func (e *execution) confirm() { e.submittedOnce.Do(func() { close(e.submitted) }) }

func (e *execution) isConfirmed() bool {
	select {
	case <-e.submitted:
		return true
	default:
		return false
	}
}

// generation is one harness process of a Session, with its own launch id
// (hooks carry it, so callbacks from an older generation are recognized)
// and its own emulator.
type generation struct {
	launchID string
	proc     *pty.Process
	ready    chan struct{} // closed on the provider's SessionStart
	exited   chan struct{} // closed once the process exited and output drained
	exit     pty.ExitStatus
	// transcript is the provider transcript path, from the first hook
	// naming it (s.mu).
	transcript string
	// out is what the process printed, for prompt delivery (package delivery).
	out delivery.Watch
}

// session is one Session. mu guards every mutable field; one update
// function at a time changes its state (see transitionLocked, lifecycle.go).
type session struct {
	uid  string
	h    harness.Harness
	rows *store.RowLog
	raw  *store.RawLog

	mu   sync.Mutex
	rec  sessionRecord
	gen  *generation
	exec *execution
	// endedTurnID is the provider's id of the last turn that ended, to
	// recognise a prompt submission that names it (applyEvidence).
	endedTurnID string
	attach      *attachLease
	// steerMu serialises the steers typed into the running turn
	// (steer.go), never held with mu.
	steerMu sync.Mutex
	// approvals holds the request the Session asks (pending.go), and
	// the last ones closed, for a late answer's error.
	approvals approvals.Box
	// changed is closed and replaced whenever something a fetch waiter
	// could observe changed (events, results, committed rows).
	changed chan struct{}
	// pub is the Session's change marks as of the last change (published
	// by notifyLocked, read without s.mu): all:true skips a Session whose
	// marks its reader already has without locking it (fetch_state.go).
	pub atomic.Pointer[sessionPub]
	// lastEvent is the seq of the newest event recorded for this Session.
	lastEvent uint64
	// events records which of this Session's events retention dropped
	// (fetch_state.go).
	events fetchdoc.EventLoss
	// lastOutput is when the PTY last produced output.
	lastOutput time.Time
	// unsaved are writes that failed for want of space, retried in
	// order before any later one (storage.go).
	unsaved []pendingWrite
	// txWrites collects writes inside oneTxLocked (storage.go).
	txWrites *[]pendingWrite

	// spare, while set, makes this a warm spare, not a Session: nothing
	// stores its record or records its events (spares.go). Cleared, under
	// mu, when a create claims it.
	spare *spares.Spare[*spare]

	// termMu guards screen (the pump writes, readers render the live grid).
	termMu sync.Mutex
	screen *vt.Screen
}

// attachLease is the exclusive input lease of an interactive attach.
type attachLease struct {
	token string
}

func (s *session) notifyLocked() {
	s.publishLocked()
	close(s.changed)
	s.changed = make(chan struct{})
}

// snapshotLocked renders the public Session. busy diagnostics appear only
// in state busy.
func (s *session) snapshotLocked(now time.Time) rpc.Session {
	r := s.rec
	out := rpc.Session{
		ID: r.ID, Alias: r.Alias, Title: r.Title, Harness: r.Harness, Cwd: r.Cwd,
		Model: r.Model, Effort: r.Effort, State: string(r.State),
		CreatedAtMS: r.CreatedAtMS, UpdatedAtMS: r.UpdatedAtMS, Warm: r.Warm,
	}
	if r.Worktree != nil {
		wt := *r.Worktree
		out.Worktree = &wt
	}
	if r.State == rpc.StateBusy && s.exec != nil {
		busy := now.Sub(s.exec.startedAt).Milliseconds()
		quiet := busy
		if !s.lastOutput.IsZero() && s.lastOutput.After(s.exec.startedAt) {
			quiet = now.Sub(s.lastOutput).Milliseconds()
		}
		if quiet > busy {
			quiet = busy
		}
		out.BusyForMS, out.PTYQuietForMS = &busy, &quiet
	}
	out.Pending = s.pendingSnapshotLocked()
	out.Queued = s.queuedSnapshotLocked()
	if s.exec != nil {
		out.ActiveExecution = s.exec.seq
	}
	return out
}

func (s *session) snapshot() rpc.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked(time.Now())
}

func (r *sessionRecord) marshal() []byte {
	b, _ := json.Marshal(r)
	return b
}

func nowMS() int64 { return time.Now().UnixMilli() }
