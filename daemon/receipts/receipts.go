package receipts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// MaxRequestID bounds the idempotency key.
const MaxRequestID = 128

// nonIdentity are the parameters that legitimately differ between retries
// of one acceptance and so are left out of its payload identity.
var nonIdentity = []string{"environment", "rows", "cols", "correlation_id", "request_id"}

// Digest is the canonical identity of an acceptance: the method and
// every other parameter, object keys sorted, arrays in order, strings
// byte for byte.
func Digest(method string, params json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return "", err
	}
	for _, k := range nonIdentity {
		delete(m, k)
	}
	// encoding/json sorts map keys, recursively, and keeps array order.
	canon, err := rpc.Marshal(map[string]any{"method": method, "params": m})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// Stored is a retained acceptance receipt.
type Stored struct {
	Digest string `json:"digest"`
	// State is "" for a settled receipt, StateProvisional while its
	// acceptance is still running, StateVoid when that acceptance failed
	// after a provisional write (a void receipt counts as absent).
	State      string      `json:"state,omitempty"`
	SessionUID string      `json:"session_uid"`
	Receipt    rpc.Receipt `json:"receipt"`
}

const (
	StateProvisional = "provisional"
	StateVoid        = "void"
)

// acceptanceKey carries an acceptance's request_id and reservation in its
// context, so the code that records the execution can store the
// provisional receipt.
type acceptanceKey struct{}

type acceptance struct {
	id  string
	res *Reservation
}

func WithAcceptance(ctx context.Context, id string, res *Reservation) context.Context {
	return context.WithValue(ctx, acceptanceKey{}, acceptance{id, res})
}

// Provisional stores the receipt of an acceptance whose execution was just
// recorded, before the prompt is delivered or the harness launched: if the
// daemon dies before the acceptance settles, a retry of the same
// request_id replays this receipt (its execution then has an interrupted
// result) instead of running the prompt a second time. Best effort: a
// failed write is reported by Finish's own write.
func (r *Table) Provisional(ctx context.Context, st Stored) {
	a, ok := ctx.Value(acceptanceKey{}).(acceptance)
	if !ok {
		return
	}
	st.Digest, st.State = a.res.digest, StateProvisional
	data, _ := json.Marshal(st)
	if r.db.PutReceipt(a.id, data, r.cursorOf(&st)...) == nil {
		a.res.provisional = true
	}
}

// Reservation holds a request_id while its acceptance runs, so a
// concurrent duplicate waits for the winner instead of acting twice.
type Reservation struct {
	digest      string
	provisional bool // a provisional receipt was stored
	done        chan struct{}
	stored      *Stored // set on success
}

// Table is the idempotency table: in-flight reservations in memory,
// settled receipts in the store (the last 1,024 are kept).
type Table struct {
	db *store.DB
	// recorded reports whether a provisional receipt's execution was
	// recorded on its Session; one that was not never started, so its
	// request_id is free to run.
	Recorded func(st *Stored) bool
	// positionOf is the stored form of a receipt's cursor, written in
	// the receipt's own transaction.
	PositionOf func(st *Stored) (store.Position, bool)
	// mu guards inflight and unsaved.
	mu       sync.Mutex
	inflight map[string]*Reservation
	// unsaved are settled receipts whose store failed (disk full): a
	// retry of the id stores the receipt then replays it, so the
	// acceptance is acknowledged once, and only once it is stored.
	unsaved map[string]*Stored
}

func New(db *store.DB) *Table {
	return &Table{db: db, inflight: map[string]*Reservation{}, unsaved: map[string]*Stored{}}
}

func ValidateRequestID(id string) error {
	switch {
	case id == "":
		return rpc.InvalidField("request_id", "must not be empty")
	case len(id) > MaxRequestID:
		return rpc.InvalidField("request_id", "longer than %d bytes", MaxRequestID)
	}
	return nil
}

var ErrDifferentPayload = rpc.InvalidField("request_id", "was already used with a different payload; choose a new request_id")

// Reserve returns either a settled receipt to replay, or a reservation the
// caller must settle with Finish.
func (r *Table) Reserve(id, digest string) (*Stored, *Reservation, error) {
	for {
		r.mu.Lock()
		if res, ok := r.inflight[id]; ok {
			r.mu.Unlock()
			if res.digest != digest {
				return nil, nil, ErrDifferentPayload
			}
			<-res.done
			if res.stored != nil {
				return res.stored, nil, nil
			}
			continue // the winner failed and stored nothing: try ourselves
		}
		if st, ok := r.unsaved[id]; ok {
			defer r.mu.Unlock()
			if st.Digest != digest {
				return nil, nil, ErrDifferentPayload
			}
			data, _ := json.Marshal(st)
			if err := r.db.PutReceipt(id, data, r.cursorOf(st)...); err != nil {
				return nil, nil, &ErrUnsaved{Stored: st, Err: err}
			}
			delete(r.unsaved, id)
			return st, nil, nil
		}
		data, err := r.db.GetReceipt(id)
		if err == nil {
			r.mu.Unlock()
			var st Stored
			if err := json.Unmarshal(data, &st); err != nil {
				return nil, nil, err
			}
			if st.State == StateVoid || (st.State == StateProvisional && r.Recorded != nil && !r.Recorded(&st)) {
				// Nothing ran under this id: it is free, as after a failed
				// acceptance. Re-check for a concurrent retry first.
				r.mu.Lock()
				if _, busy := r.inflight[id]; busy {
					r.mu.Unlock()
					continue
				}
				res := &Reservation{digest: digest, done: make(chan struct{})}
				r.inflight[id] = res
				r.mu.Unlock()
				return nil, res, nil
			}
			if st.Digest != digest {
				return nil, nil, ErrDifferentPayload
			}
			return &st, nil, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			r.mu.Unlock()
			return nil, nil, err
		}
		res := &Reservation{digest: digest, done: make(chan struct{})}
		r.inflight[id] = res
		r.mu.Unlock()
		return nil, res, nil
	}
}

// Finish settles a reservation: a success is stored, a failure stores
// nothing so the same id may be retried.
func (r *Table) Finish(id string, res *Reservation, st *Stored) error {
	var err error
	if st == nil && res.provisional {
		data, _ := json.Marshal(Stored{Digest: res.digest, State: StateVoid})
		r.db.PutReceipt(id, data)
	}
	if st != nil {
		st.Digest, st.State = res.digest, ""
		data, _ := json.Marshal(st)
		if err = r.db.PutReceipt(id, data, r.cursorOf(st)...); err == nil {
			res.stored = st
		}
	}
	r.mu.Lock()
	delete(r.inflight, id)
	if err != nil {
		r.unsaved[id] = st
	}
	r.mu.Unlock()
	close(res.done)
	return err
}

// cursorOf is what a write of st carries besides it: its cursor's
// position, when held.
func (r *Table) cursorOf(st *Stored) []store.Position {
	if r.PositionOf == nil {
		return nil
	}
	if p, ok := r.PositionOf(st); ok {
		return []store.Position{p}
	}
	return nil
}

// ErrUnsaved is a retry of an acceptance whose receipt still
// cannot be stored.
type ErrUnsaved struct {
	Stored *Stored
	Err    error
}

func (e *ErrUnsaved) Error() string { return e.Err.Error() }
func (e *ErrUnsaved) Unwrap() error { return e.Err }
