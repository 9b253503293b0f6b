package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the value of meta/schema_version written by this build.
// 2: rows/<uid> holds chunk buckets (see rowChunk); a schema 1 file is
// upgraded on Open, each session's rows when the session is first loaded.
// 3: new rows are stored in blocks of consecutive rows (see appendBlockRow);
// schema 2 values of one row are still read, so nothing is rewritten.
const SchemaVersion = 3

// Defaults for Options fields left at zero.
const (
	DefaultLockTimeout   = time.Second
	DefaultFlushInterval = 25 * time.Millisecond
	// Each commit ends in an fsync, so a flood of output is committed in
	// large batches: with 512 rows / 256 KiB a 50 MB stream took about a
	// thousand commits and the daemon ingested 25% slower (ingest
	// benchmark). Readers still see rows within FlushInterval. Rows of
	// usual length reach FlushBytes first (about 14,000 rows of 100
	// bytes): 8,192 rows made 67 commits of a 50 MiB stream instead of 52
	// and cost the flusher 1.7x the CPU.
	DefaultFlushRows       = 32768
	DefaultFlushBytes      = 2 << 20
	DefaultMaxPendingBytes = 8 << 20
)

// Retention limits.
const (
	RowRetention         = 10_000   // newest rows kept per session
	ResultRetention      = 128      // newest results kept per session ...
	ResultRetentionBytes = 16 << 20 // ... or this many bytes of result bodies, whichever is smaller
	ReceiptRetention     = 1_024    // newest receipts kept (by first insertion)
	EventRetention       = 50_000   // newest events kept per daemon
)

// Bucket names. See NOTES.md for the layout.
var (
	bucketMeta          = []byte("meta")
	bucketSessions      = []byte("sessions")
	bucketResults       = []byte("results")
	bucketResultsEvict  = []byte("results_evicted")
	bucketReceipts      = []byte("receipts")
	bucketReceiptOrder  = []byte("receipt_order")
	bucketEvents        = []byte("events")
	bucketEventsBySess  = []byte("events_by_session")
	bucketRows          = []byte("rows")
	bucketRowsMeta      = []byte("rows_meta")
	bucketPositions     = []byte("positions")
	bucketPositionsHWM  = []byte("positions_hwm")
	topLevelBuckets     = [][]byte{bucketMeta, bucketSessions, bucketResults, bucketResultsEvict, bucketReceipts, bucketReceiptOrder, bucketEvents, bucketEventsBySess, bucketRows, bucketRowsMeta, bucketPositions, bucketPositionsHWM}
	keySchemaVersion    = []byte("schema_version")
	keyEventSeq         = []byte("event_seq")
	keyEventsEvicted    = []byte("events_evicted_through")
	keyReceiptSeq       = []byte("receipt_seq")
	appendFillPercent   = 0.95 // for buckets whose keys only ever grow
	maxFlushRetryPeriod = time.Second
)

// rowOverhead is the memory charged per pending row on top of its text.
const rowOverhead = 48

// Options configures Open. Zero values select the defaults.
type Options struct {
	// LockTimeout bounds how long Open waits for the file lock before
	// returning ErrLocked. Default 1s.
	LockTimeout time.Duration

	// FlushInterval is the longest a row waits in memory before the flusher
	// commits it. Default 25ms.
	FlushInterval time.Duration
	// FlushRows and FlushBytes trigger an immediate commit when the rows
	// pending across all sessions reach either bound. Defaults 512 rows and
	// 256 KiB.
	FlushRows  int
	FlushBytes int
	// MaxPendingBytes bounds the memory held by uncommitted rows (text plus a
	// fixed per-row overhead, in-flight batch included). When it is reached,
	// RowLog.Append blocks until the flusher commits. Default 8 MiB.
	MaxPendingBytes int
}

func (o Options) withDefaults() Options {
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.FlushRows <= 0 {
		o.FlushRows = DefaultFlushRows
	}
	if o.FlushBytes <= 0 {
		o.FlushBytes = DefaultFlushBytes
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if o.FlushBytes > o.MaxPendingBytes {
		o.FlushBytes = o.MaxPendingBytes
	}
	return o
}

// DB is the open state file. See the package documentation for which methods
// may be called concurrently (all of them, unless stated otherwise).
type DB struct {
	bolt *bolt.DB
	path string
	opts Options

	closed      atomic.Bool
	closeErr    error         // final flush error; written by the flusher before flusherDone closes
	closing     chan struct{} // closed by Close to stop the flusher
	flusherDone chan struct{} // closed when the flusher has exited
	wake        chan struct{} // cap 1: "look at the pending counters"
	flushReq    chan chan error

	// Rows waiting for (or in) a commit, across all sessions. Updated under
	// the owning RowLog's mu when rows are added, by the flusher after a
	// commit when they are removed.
	pendingRows  atomic.Int64
	pendingBytes atomic.Int64
	lastFlushErr atomic.Pointer[error]

	hook atomic.Pointer[func(uid string, committedThrough uint64)]

	lastEventSeq  atomic.Uint64
	eventsEvicted atomic.Uint64

	// readTxns counts the read transactions begun (ReadTxns).
	readTxns atomic.Uint64

	// flushMu serializes flush cycles with DeleteSession, so a batch taken
	// from a RowLog can never be written after its session was deleted.
	flushMu sync.Mutex

	// bpMu guards nothing but is the lock of bpCond, on which Append waits
	// for room in the pending buffer (backpressure).
	bpMu   sync.Mutex
	bpCond *sync.Cond

	// logsMu guards the fields that follow.
	logsMu sync.Mutex
	logs   map[string]*RowLog

	// dirtyMu guards the fields that follow. Lock order: RowLog.mu, then dirtyMu.
	dirtyMu sync.Mutex
	dirty   []*RowLog // RowLogs whose pending slice went from empty to non-empty
	spare   []*RowLog

	// rowArena holds the row values of the commit in progress (bbolt keeps
	// references to them until the transaction ends) and is reused by the
	// next one. Only the flusher uses it, under flushMu.
	rowArena []byte
}

// Open opens (creating if needed, mode 0600) the bbolt state file at path and
// starts the row flusher. It fails with ErrLocked if another process holds
// the file for longer than opts.LockTimeout and with ErrSchemaTooNew if the
// file was written by a newer schema.
func Open(path string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:      opts.LockTimeout,
		FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("%w (%s)", ErrLocked, path)
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db := &DB{
		bolt:        bdb,
		path:        path,
		opts:        opts,
		closing:     make(chan struct{}),
		flusherDone: make(chan struct{}),
		wake:        make(chan struct{}, 1),
		flushReq:    make(chan chan error),
		logs:        make(map[string]*RowLog),
	}
	db.bpCond = sync.NewCond(&db.bpMu)
	if err := db.init(); err != nil {
		bdb.Close()
		return nil, err
	}
	go db.runFlusher()
	return db, nil
}

// init creates missing buckets, checks the schema version and loads the
// in-memory copies of the event watermarks.
func (db *DB) init() error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta != nil {
			if v := meta.Get(keySchemaVersion); v != nil && decodeU64(v) > SchemaVersion {
				return fmt.Errorf("%w: file has %d, this build supports %d", ErrSchemaTooNew, decodeU64(v), SchemaVersion)
			}
		}
		for _, name := range topLevelBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("store: create bucket %s: %w", name, err)
			}
		}
		meta = tx.Bucket(bucketMeta)
		if v := meta.Get(keySchemaVersion); v == nil || decodeU64(v) < SchemaVersion {
			if err := meta.Put(keySchemaVersion, encodeU64(SchemaVersion)); err != nil {
				return err
			}
		}
		db.lastEventSeq.Store(getU64(meta, keyEventSeq))
		db.eventsEvicted.Store(getU64(meta, keyEventsEvicted))
		return nil
	})
}

// Path returns the file path passed to Open.
func (db *DB) Path() string { return db.path }

// Close commits all pending rows, stops the flusher and closes the file. Rows
// appended concurrently with or after Close are discarded; Appends blocked on
// backpressure return. Close returns the final flush error, if any, joined
// with the close error. A second Close returns ErrClosed.
func (db *DB) Close() error {
	if !db.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	close(db.closing)
	<-db.flusherDone
	db.bpMu.Lock()
	db.bpCond.Broadcast()
	db.bpMu.Unlock()
	return errors.Join(db.closeErr, db.bolt.Close())
}

// Check runs bbolt's consistency check and returns the first problem found.
// It runs in a writable transaction (rolled back) so it is safe while the
// flusher is active; it blocks writers while it runs.
func (db *DB) Check() error {
	if db.closed.Load() {
		return ErrClosed
	}
	tx, err := db.bolt.Begin(true)
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback()
	var first error
	for err := range tx.Check() {
		if first == nil {
			first = err
		}
	}
	if first != nil {
		return fmt.Errorf("store: check: %w", first)
	}
	return nil
}

// LastFlushError returns the error of the most recent row commit, or nil if it
// succeeded. Rows whose commit failed stay pending and are retried.
func (db *DB) LastFlushError() error {
	if p := db.lastFlushErr.Load(); p != nil {
		return *p
	}
	return nil
}

// SetCommitHook installs fn (nil removes it). After every row commit the
// flusher calls fn(uid, committedThrough) once per session that committed
// rows, outside the bbolt transaction and with no store locks held. fn runs on
// the flusher goroutine: it must be quick and must not call Append, Flush,
// DeleteSession or Close (it may call Read, ReadBefore, Committed and First).
func (db *DB) SetCommitHook(fn func(uid string, committedThrough uint64)) {
	if fn == nil {
		db.hook.Store(nil)
		return
	}
	db.hook.Store(&fn)
}

func (db *DB) update(fn func(tx *bolt.Tx) error) error {
	if db.closed.Load() {
		return ErrClosed
	}
	return mapErr(db.bolt.Update(fn))
}

func (db *DB) view(fn func(tx *bolt.Tx) error) error {
	if db.closed.Load() {
		return ErrClosed
	}
	db.readTxns.Add(1)
	return mapErr(db.bolt.View(fn))
}

// ReadTxns is the number of read transactions begun since Open, for
// benchmarks and tests that count what a read costs.
func (db *DB) ReadTxns() uint64 { return db.readTxns.Load() }

func mapErr(err error) error {
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

func checkName(s string) error {
	if s == "" || len(s) > bolt.MaxKeySize {
		return fmt.Errorf("%w: %q", ErrInvalidName, truncate(s, 64))
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func encodeU64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

func decodeU64(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func getU64(b *bolt.Bucket, key []byte) uint64 {
	if b == nil {
		return 0
	}
	return decodeU64(b.Get(key))
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// storeMax raises a to v if v is larger.
func storeMax(a *atomic.Uint64, v uint64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}
