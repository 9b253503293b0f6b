package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/daemon/receipts"
	"github.com/dlgt-dev/dlgt/daemon/worktree"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Bounds on acceptance inputs.
const (
	// maxPromptBytes keeps a prompt well inside the 1 MiB request line
	// even after JSON escaping.
	maxPromptBytes = 512 << 10
	maxTitleBytes  = 200
	maxOptions     = 64
	maxEnvEntries  = 4096
)

var aliasPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`) })

func validatePrompt(p string) error {
	switch {
	case p == "":
		return rpc.InvalidField("prompt", "must not be empty")
	case len(p) > maxPromptBytes:
		return rpc.InvalidField("prompt", "longer than %d bytes", maxPromptBytes)
	case strings.ContainsRune(p, 0x1b):
		// An escape byte could end the bracketed paste early and inject
		// keystrokes into the harness.
		return rpc.InvalidField("prompt", "must not contain escape bytes (0x1b)")
	case strings.ContainsRune(p, 0):
		return rpc.InvalidField("prompt", "must not contain NUL bytes")
	}
	return nil
}

// unsafeTitleRune reports C0/C1 controls and bidirectional overrides, which
// would let a title rewrite the terminal or the reading order of listings.
func unsafeTitleRune(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

func validateTitle(t string) error {
	switch {
	case strings.TrimSpace(t) == "":
		return rpc.InvalidField("title", "must not be empty")
	case len(t) > maxTitleBytes:
		return rpc.InvalidField("title", "longer than %d bytes", maxTitleBytes)
	case strings.ContainsFunc(t, unsafeTitleRune):
		return rpc.InvalidField("title", "must not contain control characters")
	}
	return nil
}

func validateSize(rows, cols int) (int, int, error) {
	if rows == 0 {
		rows = defaultRows
	}
	if cols == 0 {
		cols = defaultCols
	}
	if rows < 2 || rows > maxRows {
		return 0, 0, rpc.InvalidField("rows", "must be between 2 and %d", maxRows)
	}
	if cols < 10 || cols > maxCols {
		return 0, 0, rpc.InvalidField("cols", "must be between 10 and %d", maxCols)
	}
	return rows, cols, nil
}

func startupTimeout(ms int64) (time.Duration, error) {
	switch {
	case ms == 0:
		return defaultStartupTimeout, nil
	case ms < 0 || time.Duration(ms)*time.Millisecond > maxStartupTimeout:
		return 0, rpc.InvalidField("startup_timeout_ms", "must be between 1 and %d", maxStartupTimeout.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func validateEnv(env map[string]string) error {
	if len(env) > maxEnvEntries {
		return rpc.InvalidField("environment", "more than %d entries", maxEnvEntries)
	}
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return rpc.InvalidField("environment", "invalid entry %q", clipRef(k))
		}
	}
	return nil
}

// maxAliasSlug bounds the title part of a derived alias, so the alias
// (slug, "-", six hex digits) stays at most 27 characters: short enough to
// type and to fit a table column. Aliases already stored keep their length.
const maxAliasSlug = 20

// slugAlias derives an alias from a title plus a random suffix: the
// title's letters and digits, lower-cased, runs of anything else as one
// "-", cut to maxAliasSlug at the last word boundary within it (or hard
// at maxAliasSlug when the first word alone is about as long).
func slugAlias(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() > maxAliasSlug {
			break
		}
	}
	slug := b.String()
	if len(slug) > maxAliasSlug {
		// A dash at index maxAliasSlug ends a whole word at the bound.
		if i := strings.LastIndexByte(slug[:maxAliasSlug+1], '-'); i >= maxAliasSlug/2 {
			slug = slug[:i]
		} else {
			slug = slug[:maxAliasSlug]
		}
	}
	slug = strings.Trim(slug, "-")
	if slug == "" {
		slug = "session"
	}
	var suf [3]byte
	rand.Read(suf[:])
	return slug + "-" + hex.EncodeToString(suf[:])
}

func newUID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// validateLaunch checks the launch fields session.create and
// session.warm share: the harness options, the environment and the
// working directory.
func validateLaunch(h harness.Harness, options []string, env map[string]string, cwd string) error {
	if len(options) > maxOptions {
		return rpc.InvalidField("harness_options", "more than %d entries", maxOptions)
	}
	if err := h.ValidateOptions(options); err != nil {
		return err
	}
	if err := validateEnv(env); err != nil {
		return err
	}
	if !strings.HasPrefix(cwd, "/") {
		return rpc.InvalidField("cwd", "must be an absolute path (the client resolves relative paths)")
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return rpc.InvalidField("cwd", "%s is not a directory", clipRef(cwd))
	}
	return nil
}

func (rt *runtime) sessionCreate(ctx context.Context, peer rpc.Peer, p rpc.SessionCreateParams) (rpc.Receipt, error) {
	if err := receipts.ValidateRequestID(p.RequestID); err != nil {
		return rpc.Receipt{}, err
	}
	h, err := rt.catalog.Get(p.Harness)
	if err != nil {
		return rpc.Receipt{}, err
	}
	if err := validateTitle(p.Title); err != nil {
		return rpc.Receipt{}, err
	}
	if err := validatePrompt(p.Prompt); err != nil {
		return rpc.Receipt{}, err
	}
	if err := validateLaunch(h, p.HarnessOptions, p.Environment, p.Cwd); err != nil {
		return rpc.Receipt{}, err
	}
	alias := normalizeAlias(p.Alias)
	if p.Alias != "" && !aliasPattern().MatchString(alias) {
		return rpc.Receipt{}, rpc.InvalidField("alias", "must match %s (an optional leading @ is allowed)", aliasPattern())
	}
	rows, cols, err := validateSize(p.Rows, p.Cols)
	if err != nil {
		return rpc.Receipt{}, err
	}
	timeout, err := startupTimeout(p.StartupTimeoutMS)
	if err != nil {
		return rpc.Receipt{}, err
	}
	if p.Worktree != nil && p.Worktree.Branch != "" {
		if err := worktree.ValidateBranchSyntax(p.Worktree.Branch); err != nil {
			return rpc.Receipt{}, err
		}
	}
	digest, err := receipts.Digest(rpc.MethodSessionCreate, acceptanceParams(ctx))
	if err != nil {
		return rpc.Receipt{}, err
	}
	replay, res, err := rt.receipts.Reserve(p.RequestID, digest)
	if err != nil {
		return rpc.Receipt{}, rt.reserveError(err)
	}
	if replay != nil {
		return rt.replayReceipt(replay), nil
	}
	ctx = receipts.WithAcceptance(ctx, p.RequestID, res)
	autoApprove := p.AutoApprove == nil || *p.AutoApprove
	rec := sessionRecord{
		UID: newUID(), Alias: alias, Title: p.Title, Harness: h.Name(), Cwd: p.Cwd,
		Model: p.Model, Effort: p.Effort, HarnessOptions: p.HarnessOptions, AutoApprove: autoApprove,
		State: rpc.StateStarting, CreatedAtMS: nowMS(), Epoch: 1, Rows: rows, Cols: cols,
	}
	if p.Worktree != nil {
		// Made only once the request_id is reserved: a replay returns the
		// Session this made and never makes a second worktree.
		if rec.Alias == "" {
			rec.Alias = slugAlias(p.Title) // create keeps it unless taken
		}
		branch := p.Worktree.Branch
		if branch == "" {
			branch = worktree.DefaultBranch(rec.Alias)
		}
		wt, launch, werr := rt.worktrees.make(ctx, p.Cwd, branch)
		if werr != nil {
			rt.receipts.Finish(p.RequestID, res, nil)
			return rpc.Receipt{}, werr
		}
		rec.Worktree, rec.Cwd = wt, launch
	}
	st, err := rt.create(ctx, rec, p.Alias != "", launchOpts{env: p.Environment, rows: rows, cols: cols, timeout: timeout}, p.Prompt)
	if err != nil && rec.Worktree != nil {
		// Nothing half-made: a create that left no Session takes its
		// worktree and branch with it; a Session that exists (failed
		// after binding) keeps them, recorded.
		var re *rpc.Error
		if !errors.As(err, &re) || re.SessionID == "" {
			if rerr := worktree.Remove(rec.Worktree.Repo, rec.Worktree.Path, rec.Worktree.Branch); rerr != nil {
				rt.log.Warn("removing the worktree of a failed create", "path", rec.Worktree.Path, "err", rerr)
			}
		}
	}
	if ferr := rt.receipts.Finish(p.RequestID, res, st); ferr != nil && err == nil {
		return rpc.Receipt{}, rt.receiptError(st, ferr)
	}
	if err != nil {
		return rpc.Receipt{}, err
	}
	return st.Receipt, nil
}

// create registers a new Session, launches it, and accepts its first
// prompt. A failure before the provider is bound removes every trace and
// names only the internal launch id.
func (rt *runtime) create(ctx context.Context, rec sessionRecord, exactAlias bool, lo launchOpts, prompt string) (*receipts.Stored, error) {
	var sp *spare
	if rec.Worktree == nil && launchPromptFits(adapterFor(rt.catalog, rec.Harness), prompt) {
		sp = rt.claimSpare(rec, lo) // a warm spare of this shape (spares.go)
	}
	var s *session
	if sp != nil {
		s = sp.s
	} else {
		var err error
		if s, err = rt.newSessionObject(rec); err != nil {
			return nil, rt.storageError("the new Session's logs", "nothing was created; retry once the state directory is writable", err)
		}
	}
	// A spare's hooks may read its record meanwhile: its alias, title
	// and creation time are written under s.mu (taken before rt.mu, the
	// daemon's lock order).
	s.mu.Lock()
	s.rec.Alias, s.rec.Title, s.rec.CreatedAtMS = rec.Alias, rec.Title, rec.CreatedAtMS
	rt.mu.Lock()
	refused := func(err error) (*receipts.Stored, error) {
		rt.mu.Unlock()
		s.mu.Unlock()
		if sp != nil {
			rt.retireSpare(sp)
		}
		return nil, err
	}
	if rt.closing {
		return refused(rpc.Errorf(rpc.CodeRPCUnavailable, "the daemon is shutting down"))
	}
	if !exactAlias && rec.Alias != "" {
		// Derived before the create (a worktree's branch is named
		// from it): kept unless another Session took it meanwhile.
		if _, taken := rt.aliases[rec.Alias]; taken {
			rec.Alias = ""
		}
	}
	if rec.Alias == "" {
		for {
			s.rec.Alias = slugAlias(rec.Title)
			if _, taken := rt.aliases[s.rec.Alias]; !taken {
				break
			}
		}
	} else if _, taken := rt.aliases[rec.Alias]; taken {
		return refused(&rpc.Error{Code: rpc.CodeAliasInUse, Field: "alias", Message: "alias " + strconv.Quote(rec.Alias) + " belongs to an active Session"})
	}
	rt.aliases[s.rec.Alias] = s
	rt.holdSessionLocked(s)
	rt.mu.Unlock()
	s.mu.Unlock()

	if sp != nil {
		return rt.createFromSpare(ctx, sp, lo, prompt)
	}
	if lp, ok := s.h.(harness.LaunchPrompter); ok {
		return rt.createWithLaunchPrompt(ctx, s, lp, lo, prompt)
	}
	if ap, ok := s.h.(harness.ArgPrompter); ok && ap.ArgPrompt(prompt) {
		return rt.launchWithPrompt(ctx, s, lo, prompt)
	}
	g, err := rt.startGeneration(ctx, s, lo)
	if err != nil {
		rt.discard(s)
		return nil, err
	}
	s.mu.Lock()
	if s.gen != g || s.rec.State != rpc.StateIdle {
		// The harness died between ready and now.
		s.mu.Unlock()
		return nil, &rpc.Error{Code: rpc.CodeLaunchFailed, SessionID: s.rec.ID, Message: "the harness exited right after starting"}
	}
	s.mu.Unlock()
	return rt.acceptFirst(ctx, s, g, prompt)
}

// acceptFirst accepts a new Session's first prompt on its ready
// generation g. When it cannot be accepted (its record could not be
// stored) the caller is told nothing was created, so the new Session
// goes, like a failed launch.
func (rt *runtime) acceptFirst(ctx context.Context, s *session, g *generation, prompt string) (*receipts.Stored, error) {
	st, err := rt.accept(ctx, s, prompt, true)
	if err != nil {
		rt.abandon(s, g)
		var re *rpc.Error
		if errors.As(err, &re) {
			re.SessionID = ""
		}
		return nil, err
	}
	return st, nil
}

// abandon kills a new Session's harness and forgets the Session, when
// its creation fails after the launch.
func (rt *runtime) abandon(s *session, g *generation) {
	s.mu.Lock()
	rt.abandonStateLocked(s)
	s.mu.Unlock()
	g.proc.Kill()
	<-g.exited
	rt.discard(s)
}

// discard forgets a Session whose launch failed before binding.
func (rt *runtime) discard(s *session) {
	s.mu.Lock()
	s.unsaved = nil // a retried write must not bring it back
	s.mu.Unlock()
	rt.mu.Lock()
	rt.dropSessionLocked(s)
	if rt.aliases[s.rec.Alias] == s {
		delete(rt.aliases, s.rec.Alias)
	}
	if s.rec.ID != "" && rt.byID[s.rec.ID] == s {
		delete(rt.byID, s.rec.ID)
	}
	rt.mu.Unlock()
	rt.db.DeleteSession(s.uid)
}

// accept records a new execution on an idle Session and delivers the
// prompt, then waits up to SubmitWait for the provider's acknowledgement.
func (rt *runtime) accept(ctx context.Context, s *session, prompt string, fromCreate bool) (*receipts.Stored, error) {
	s.mu.Lock()
	if err := sendableLocked(s); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	// The cursor is taken before the acceptance is recorded, so a fetch
	// from it sees the busy event and every byte after it. A create's
	// cursor starts at the Session's beginning.
	cursor := rt.receiptCursorLocked(s, fromCreate)
	e := s.startExecLocked(prompt)
	// The execution is accepted only once its record is stored: when the
	// state directory is full or read-only it is undone before the
	// prompt is delivered, and no event says otherwise.
	err := rt.acceptExecLocked(s, e, func() {
		// The provisional receipt goes first: a crash after it but before
		// the record leaves a receipt for an execution that never started,
		// which a retry recognizes (receipts.recorded) and runs; the other
		// order would leave an execution no retry can replay.
		rt.receipts.Provisional(ctx, receipts.Stored{SessionUID: s.uid, Receipt: rpc.Receipt{
			Session: s.snapshotLocked(time.Now()), ExecutionSeq: e.seq, Cursor: rpc.FormatPosition(cursor),
			Submission: rpc.SubmissionPending,
		}})
	})
	if err != nil {
		id := s.rec.ID
		s.mu.Unlock()
		var re *rpc.Error
		if errors.As(err, &re) {
			return nil, re // refused: a dlgt bug, logged
		}
		rerr := rt.storageError("the Session record", "the prompt was not delivered; retry once the state directory is writable", err)
		rerr.SessionID = id
		return nil, rerr
	}
	g := s.gen
	s.mu.Unlock()

	if err := s.deliver(ctx, rt.log, g, s.h.Submit(prompt)); err != nil {
		rt.log.Warn("prompt delivery failed", "session", s.rec.ID, "err", err)
	}
	return rt.awaitReceipt(ctx, s, e, cursor), nil
}

// receiptCursorLocked mints the cursor of a receipt for an execution about
// to start: a create's starts at the Session's beginning, a send's at
// what is recorded now. s.mu held.
func (rt *runtime) receiptCursorLocked(s *session, fromCreate bool) uint64 {
	if fromCreate {
		return rt.positions.MintSession(s.uid, fetchdoc.Mark{})
	}
	return rt.positions.MintSession(s.uid, s.markLocked())
}

// startExecLocked makes prompt s's next, active execution. s.mu held.
func (s *session) startExecLocked(prompt string) *execution {
	s.rec.LastExecSeq++
	e := &execution{seq: s.rec.LastExecSeq, prompt: prompt, startedAt: time.Now(), submitted: make(chan struct{}), done: make(chan struct{})}
	s.exec = e
	s.rec.ActiveExec = &execRecord{Seq: e.seq, StartedAtMS: e.startedAt.UnixMilli()}
	s.markUsageStartLocked(e)
	return e
}

// awaitReceipt waits up to SubmitWait for the provider's acknowledgement
// of execution e (a typed prompt, or a launch prompt from the provider's
// ready evidence on), and builds its receipt.
func (rt *runtime) awaitReceipt(ctx context.Context, s *session, e *execution, cursor uint64) *receipts.Stored {
	t := time.NewTimer(rt.opts.SubmitWait)
	defer t.Stop()
	select {
	case <-e.submitted:
	case <-e.done:
	case <-t.C:
	case <-ctx.Done():
	}
	s.mu.Lock()
	st := &receipts.Stored{SessionUID: s.uid, Receipt: rpc.Receipt{
		Session: s.snapshotLocked(time.Now()), ExecutionSeq: e.seq, Cursor: rpc.FormatPosition(cursor),
	}}
	s.mu.Unlock()
	fillSubmission(&st.Receipt, e)
	return st
}

// sendableLocked checks that s can accept work now.
func sendableLocked(s *session) error {
	switch s.rec.State {
	case rpc.StateIdle:
		if s.attach != nil {
			return &rpc.Error{Code: rpc.CodeSessionAttached, SessionID: s.rec.ID, Message: "a human holds the attach lease; detach first"}
		}
		return nil
	case rpc.StateBusy, rpc.StateCanceling:
		return &rpc.Error{Code: rpc.CodeSessionBusy, SessionID: s.rec.ID, Message: "execution " + itoa(s.rec.LastExecSeq) + " is active; retry after it finishes"}
	case rpc.StateBlocked:
		return &rpc.Error{Code: rpc.CodeSessionBlocked, SessionID: s.rec.ID, Message: blockedMessage(s.rec, s.pendingSnapshotLocked())}
	default:
		return &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: s.rec.ID, Message: "the Session is " + string(s.rec.State) + " and cannot accept work"}
	}
}

// blockedMessage is SESSION_BLOCKED's message for the Session rec,
// blocked on p (nil: on nothing dlgt can answer): what it waits for and
// how to answer it, by the commands that do.
func blockedMessage(rec sessionRecord, p *rpc.Pending) string {
	ref := rec.Alias
	if ref == "" {
		ref = rec.ID
	}
	attach := "dlgt session attach " + ref
	if p == nil {
		return "the Session waits for human input that only its terminal can answer: attach to answer it (" + attach + ")"
	}
	what := "an answer to a question"
	if p.Kind == rpc.PendingPermission {
		what = "permission to run " + worktree.ClipText(p.Tool, 80)
	}
	return "the Session waits for " + what + " (dlgt session read " + ref + " -o text shows the request): answer it with session.respond (dlgt session respond " + ref +
		" --allow, or --deny), or in its terminal (" + attach + ")"
}

// fillSubmission sets submission (and the recovery hint when pending)
// from the live execution.
func fillSubmission(r *rpc.Receipt, e *execution) {
	confirmed := e == nil || e.isConfirmed()
	if e != nil {
		select {
		case <-e.done:
			confirmed = true
		default:
		}
	}
	if confirmed {
		r.Submission, r.Hint, r.Action = rpc.SubmissionConfirmed, "", nil
		return
	}
	r.Submission = rpc.SubmissionPending
	r.Hint = "The prompt was delivered but the harness has not acknowledged it yet. Do not resubmit with a new request_id: fetch from the cursor, or repeat this request_id to refresh this receipt."
	r.Action = &rpc.Action{Method: rpc.MethodSessionFetch, Params: map[string]any{
		"session": r.Session.ID, "cursor": r.Cursor, "until": "result", "wait_ms": 60000,
	}}
}

// replayReceipt returns a retained receipt with replayed:true and its
// submission refreshed from the live execution.
func (rt *runtime) replayReceipt(st *receipts.Stored) rpc.Receipt {
	r := st.Receipt
	r.Replayed = true
	rt.mu.Lock()
	s := rt.sessions[st.SessionUID]
	rt.mu.Unlock()
	var e *execution
	if s != nil {
		s.mu.Lock()
		r.Session = s.snapshotLocked(time.Now())
		if s.exec != nil && s.exec.seq == r.ExecutionSeq {
			e = s.exec
		}
		queued := s.replayQueuedLocked(&r) // queue.go
		s.mu.Unlock()
		if queued {
			return r
		}
	}
	fillSubmission(&r, e)
	return r
}

func itoa(n uint64) string { return rpc.FormatPosition(n) }

func (rt *runtime) sessionSend(ctx context.Context, peer rpc.Peer, p rpc.SessionSendParams) (rpc.Receipt, error) {
	if err := receipts.ValidateRequestID(p.RequestID); err != nil {
		return rpc.Receipt{}, err
	}
	if err := validatePrompt(p.Prompt); err != nil {
		return rpc.Receipt{}, err
	}
	if err := validateEnv(p.Environment); err != nil {
		return rpc.Receipt{}, err
	}
	if err := validateSteerQueue(&p); err != nil {
		return rpc.Receipt{}, err
	}
	if !p.Resume && (p.Title != "" || p.Alias != "" || p.Cwd != "" || p.Model != "" || p.Effort != "" || p.HarnessOptions != nil || p.AutoApprove != nil || p.StartupTimeoutMS != 0) {
		return rpc.Receipt{}, rpc.InvalidField("resume", "launch options are accepted only with resume:true")
	}
	s, err := rt.resolve(p.Session)
	if err != nil && !p.Resume {
		return rpc.Receipt{}, err
	}
	digest, derr := receipts.Digest(rpc.MethodSessionSend, acceptanceParams(ctx))
	if derr != nil {
		return rpc.Receipt{}, derr
	}
	replay, res, rerr := rt.receipts.Reserve(p.RequestID, digest)
	if rerr != nil {
		return rpc.Receipt{}, rt.reserveError(rerr)
	}
	if replay != nil {
		return rt.replayReceipt(replay), nil
	}
	ctx = receipts.WithAcceptance(ctx, p.RequestID, res)
	var st *receipts.Stored
	switch {
	case p.Resume:
		st, err = rt.resumeAndSend(ctx, s, &p)
	case p.Steer != nil:
		st, err = rt.steer(ctx, s, p.Prompt, p.Steer.ExecutionSeq) // steer.go
	case p.Queue:
		st, err = rt.enqueue(ctx, s, p.Prompt) // queue.go
	default:
		st, err = rt.accept(ctx, s, p.Prompt, false)
	}
	if ferr := rt.receipts.Finish(p.RequestID, res, st); ferr != nil && err == nil {
		return rpc.Receipt{}, rt.receiptError(st, ferr)
	}
	if err != nil {
		return rpc.Receipt{}, err
	}
	return st.Receipt, nil
}

// reserveError maps a reservation failure; a receipt that still cannot
// be stored is answered as when it was first refused.
func (rt *runtime) reserveError(err error) error {
	var u *receipts.ErrUnsaved
	if errors.As(err, &u) {
		return rt.receiptError(u.Stored, u.Err)
	}
	return err
}

// receiptError is the answer to an acceptance whose receipt could not be
// stored. The prompt was delivered, so the error says so; the receipt is
// kept in memory and a retry of the same request_id stores and returns
// it (receipts.reserve) rather than acting twice.
func (rt *runtime) receiptError(st *receipts.Stored, err error) error {
	rt.log.Error("storing receipt", "session", st.Receipt.Session.ID, "err", err)
	rerr := rt.storageError("the receipt", "execution "+itoa(st.Receipt.ExecutionSeq)+" was accepted and its prompt delivered; repeat this request_id (do not choose a new one) to get its receipt once the state directory is writable", err)
	rerr.SessionID = st.Receipt.Session.ID
	return rerr
}
