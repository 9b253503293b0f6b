package parking

import (
	"sync"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/daemon/positions"
	"github.com/dlgt-dev/dlgt/rpc"
)

// AllKey names the evaluation that all:true long polls woken by one
// change share: from one position, under one max_bytes (all:true takes no
// screen, so nothing else of a request shapes its document).
type AllKey struct {
	Pos      *positions.Position
	MaxBytes int
	WokeFrom <-chan struct{}
}

// AllMax bounds the evaluations held for one change.
const AllMax = 256

// AllShares holds the evaluations all:true long polls woken by the latest
// change share: a thousand such long polls on one position cost one
// evaluation and one encoding per distinct document, as the single-Session
// ones do (Lot). Entries of an older change are dropped when a
// newer one is first evaluated. The zero value is ready.
type AllShares struct {
	mu  sync.Mutex
	gen <-chan struct{}
	by  map[AllKey]*AllShare
}

// AllShare is one shared all:true evaluation and its sealed documents.
type AllShare struct {
	once  sync.Once
	a     *fetchdoc.AllDoc
	err   error
	docMu sync.Mutex
	docs  []*rpc.FetchDocument
}

// Get is the evaluation of k, made or to make.
func (as *AllShares) Get(k AllKey) *AllShare {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.gen != k.WokeFrom {
		as.gen, as.by = k.WokeFrom, map[AllKey]*AllShare{}
	}
	sh := as.by[k]
	if sh == nil {
		sh = &AllShare{}
		if len(as.by) < AllMax {
			as.by[k] = sh
		}
	}
	return sh
}

// Eval makes the evaluation once; every caller gets it.
func (sh *AllShare) Eval(f func() (*fetchdoc.AllDoc, error)) (*fetchdoc.AllDoc, error) {
	sh.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				sh.a, sh.err = nil, rpc.Errorf(rpc.CodeInternal, "evaluating position failed: %v", r)
			}
		}()
		sh.a, sh.err = f()
	})
	return sh.a, sh.err
}

// Document is the evaluation's document, rendered and sealed once per reason and cursor.
func (sh *AllShare) Document(env rpc.Runtime, reason string, cursor uint64) *rpc.FetchDocument {
	c := rpc.FormatPosition(cursor)
	sh.docMu.Lock()
	defer sh.docMu.Unlock()
	for _, doc := range sh.docs {
		if doc.Reason == reason && doc.Cursor == c {
			return doc
		}
	}
	doc := sh.a.Document(env, reason, cursor)
	doc.Seal()
	sh.docs = append(sh.docs, doc)
	return doc
}
