package daemon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"

	"dlgt/rpc"
	"dlgt/store"
)

// maxRequestID bounds the idempotency key.
const maxRequestID = 128

// nonIdentity are the parameters that legitimately differ between retries
// of one acceptance and so are left out of its payload identity.
var nonIdentity = []string{"environment", "rows", "cols", "correlation_id", "request_id"}

// payloadDigest is the canonical identity of an acceptance: the method and
// every other parameter, object keys sorted, arrays in order, strings
// byte for byte.
func payloadDigest(method string, params json.RawMessage) (string, error) {
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

// storedReceipt is a retained acceptance receipt.
type storedReceipt struct {
	Digest     string      `json:"digest"`
	SessionUID string      `json:"session_uid"`
	Receipt    rpc.Receipt `json:"receipt"`
}

// reservation holds a request_id while its acceptance runs, so a
// concurrent duplicate waits for the winner instead of acting twice.
type reservation struct {
	digest string
	done   chan struct{}
	stored *storedReceipt // set on success
}

// receipts is the idempotency table: in-flight reservations in memory,
// settled receipts in the store (the last 1,024 are kept).
type receipts struct {
	db *store.DB
	// mu guards inflight.
	mu       sync.Mutex
	inflight map[string]*reservation
}

func newReceipts(db *store.DB) *receipts {
	return &receipts{db: db, inflight: map[string]*reservation{}}
}

func validateRequestID(id string) error {
	switch {
	case id == "":
		return rpc.InvalidField("request_id", "must not be empty")
	case len(id) > maxRequestID:
		return rpc.InvalidField("request_id", "longer than %d bytes", maxRequestID)
	}
	return nil
}

var errDifferentPayload = rpc.InvalidField("request_id", "was already used with a different payload; choose a new request_id")

// reserve returns either a settled receipt to replay, or a reservation the
// caller must settle with finish.
func (r *receipts) reserve(id, digest string) (*storedReceipt, *reservation, error) {
	for {
		r.mu.Lock()
		if res, ok := r.inflight[id]; ok {
			r.mu.Unlock()
			if res.digest != digest {
				return nil, nil, errDifferentPayload
			}
			<-res.done
			if res.stored != nil {
				return res.stored, nil, nil
			}
			continue // the winner failed and stored nothing: try ourselves
		}
		data, err := r.db.GetReceipt(id)
		if err == nil {
			r.mu.Unlock()
			var st storedReceipt
			if err := json.Unmarshal(data, &st); err != nil {
				return nil, nil, err
			}
			if st.Digest != digest {
				return nil, nil, errDifferentPayload
			}
			return &st, nil, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			r.mu.Unlock()
			return nil, nil, err
		}
		res := &reservation{digest: digest, done: make(chan struct{})}
		r.inflight[id] = res
		r.mu.Unlock()
		return nil, res, nil
	}
}

// finish settles a reservation: a success is stored, a failure stores
// nothing so the same id may be retried.
func (r *receipts) finish(id string, res *reservation, st *storedReceipt) error {
	var err error
	if st != nil {
		st.Digest = res.digest
		data, _ := json.Marshal(st)
		if err = r.db.PutReceipt(id, data); err == nil {
			res.stored = st
		}
	}
	r.mu.Lock()
	delete(r.inflight, id)
	r.mu.Unlock()
	close(res.done)
	return err
}
