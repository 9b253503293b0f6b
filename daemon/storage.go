package daemon

import (
	"strings"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// Storage failures (the state directory's disk full or read-only) are
// RPC_UNAVAILABLE: nothing the caller sent is wrong and a retry succeeds
// once space returns, so they are not INVALID_ARGUMENT, and they are not
// a dlgt invariant failure (INTERNAL). The message names the state
// directory and the cause. An acceptance whose records could not be
// stored is never acknowledged (see accept and receipts.Table.Finish).

// storageError maps a failure to store what an operation needs to a
// wire error: RPC_UNAVAILABLE naming the state directory when the disk
// is at fault, INTERNAL otherwise.
// what names what could not be stored; then says what the caller should
// do.
func (rt *runtime) storageError(what, then string, err error) *rpc.Error {
	if cause := store.DiskCause(err); cause != "" {
		return rpc.Errorf(rpc.CodeRPCUnavailable, "could not store %s: the state directory %s %s; %s (%v)", what, rt.paths.DataDir, cause, then, err)
	}
	return rpc.Errorf(rpc.CodeInternal, "could not store %s: %v; %s", what, err, then)
}

// storeRetryInterval is how often writes that failed for want of space
// are retried while any is pending.
const storeRetryInterval = time.Second

// pendingWrite is a Session write (record, event, result) that failed
// because the state directory was full or read-only. It is retried, in
// order, before any later write of the Session, so nothing is dropped
// and nothing is stored out of order: a result that could not be stored
// keeps the stored record's active execution, so a crash meanwhile gives
// it an interrupted result instead of losing it.
type pendingWrite struct {
	what string
	do   func(w store.Writer) error
}

// storeLocked runs a Session write behind any pending ones. A write that
// fails for an environmental reason (diskCause) is queued for retry;
// the error is returned either way so callers that acknowledge something
// on the strength of the write can refuse. Inside oneTxLocked the write
// is collected instead, and nil returned. s.mu held.
func (rt *runtime) storeLocked(s *session, what string, do func(w store.Writer) error) error {
	if s.txWrites != nil {
		*s.txWrites = append(*s.txWrites, pendingWrite{what, do})
		return nil
	}
	if err := rt.retryUnsavedLocked(s); err != nil {
		if what != "session record" || len(s.unsaved) == 0 || s.unsaved[len(s.unsaved)-1].what != what {
			s.unsaved = append(s.unsaved, pendingWrite{what, do})
		}
		return err
	}
	err := do(rt.db)
	if err == nil {
		return nil
	}
	rt.log.Error("storing "+what, "session", s.rec.ID, "uid", s.uid, "err", err)
	if store.DiskCause(err) != "" {
		s.unsaved = append(s.unsaved, pendingWrite{what, do})
		rt.startRetry()
	}
	return err
}

// retryUnsavedLocked retries s's pending writes in order and wakes
// observers when any was stored. It returns the error of the first one
// still failing. s.mu held.
func (rt *runtime) retryUnsavedLocked(s *session) error {
	n := 0
	var err error
	for len(s.unsaved) > 0 {
		if err = s.unsaved[0].do(rt.db); err != nil {
			break
		}
		s.unsaved = s.unsaved[1:]
		n++
	}
	if n > 0 {
		rt.log.Info("stored writes that had failed", "session", s.rec.ID, "writes", n, "still_pending", len(s.unsaved))
		s.notifyLocked()
		rt.notifyAll()
	}
	return err
}

// oneTxLocked runs fn, which changes s, and stores every write fn makes
// in one transaction: a turn's end writes its result, the idle record and
// session.idle, and one fsync instead of three is most of the time from
// a Stop to its long polls waking. Observers are woken once, after the
// commit (or after the writes were queued for retry). Writes made under
// fn must not be acknowledged on the strength of their error (it is nil).
// s.mu held.
func (rt *runtime) oneTxLocked(s *session, fn func()) {
	var writes []pendingWrite
	s.txWrites = &writes
	func() {
		defer func() { s.txWrites = nil }()
		fn()
	}()
	if len(writes) == 0 {
		return
	}
	whats := make([]string, len(writes))
	for i, w := range writes {
		whats[i] = w.what
	}
	rt.storeLocked(s, strings.Join(whats, ", "), func(store.Writer) error {
		return rt.db.Update(func(tx *store.Tx) error {
			for _, w := range writes {
				if err := w.do(tx); err != nil {
					return err
				}
			}
			return nil
		})
	})
	rt.changedLocked(s)
}

// changedLocked wakes s's observers and all:true waiters, unless inside
// oneTxLocked (which wakes them once its writes are stored). s.mu held.
func (rt *runtime) changedLocked(s *session) {
	if s.txWrites != nil {
		return
	}
	s.notifyLocked()
	rt.notifyAll()
}

// startRetry starts the retry loop unless it runs.
func (rt *runtime) startRetry() {
	if rt.retrying.CompareAndSwap(false, true) {
		go rt.retryLoop()
	}
}

// retryLoop retries every Session's pending writes until none is left
// (or the daemon closes).
func (rt *runtime) retryLoop() {
	t := time.NewTicker(storeRetryInterval)
	defer t.Stop()
	for range t.C {
		if !rt.retryAll() {
			rt.retrying.Store(false)
			// A write queued while the flag was still set started no loop.
			if !rt.retryAll() || !rt.retrying.CompareAndSwap(false, true) {
				return
			}
		}
	}
}

// retryAll makes one retry pass; it reports whether writes are left and
// the daemon is not closing.
func (rt *runtime) retryAll() bool {
	rt.mu.Lock()
	all := make([]*session, 0, len(rt.sessions))
	for _, s := range rt.sessions {
		all = append(all, s)
	}
	closing := rt.closing
	rt.mu.Unlock()
	left := false
	for _, s := range all {
		s.mu.Lock()
		rt.retryUnsavedLocked(s)
		left = left || len(s.unsaved) > 0
		s.mu.Unlock()
	}
	return left && !closing
}
