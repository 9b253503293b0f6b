package parking

import (
	"testing"

	"github.com/dlgt-dev/dlgt/daemon/fetchdoc"
	"github.com/dlgt-dev/dlgt/daemon/positions"
	"github.com/dlgt-dev/dlgt/rpc"
)

// One change's all:true long polls from one position and max_bytes
// share one evaluation; a newer change starts afresh; a panicking
// evaluation is an INTERNAL error to every caller.
func TestAllSharesOnePerChange(t *testing.T) {
	var as AllShares
	pos := &positions.Position{}
	c1, c2 := make(chan struct{}), make(chan struct{})
	k := AllKey{Pos: pos, MaxBytes: 10, WokeFrom: c1}
	if a, b := as.Get(k), as.Get(k); a != b {
		t.Fatal("one key, two evaluations")
	}
	if as.Get(k) == as.Get(AllKey{Pos: pos, MaxBytes: 11, WokeFrom: c1}) {
		t.Fatal("two max_bytes shared an evaluation")
	}
	first := as.Get(k)
	if as.Get(AllKey{Pos: pos, MaxBytes: 10, WokeFrom: c2}) == first || as.Get(k) == first {
		t.Fatal("an older change's evaluation was kept")
	}
	sh := as.Get(AllKey{Pos: pos, MaxBytes: 1, WokeFrom: c2})
	n := 0
	for range 3 {
		_, err := sh.Eval(func() (*fetchdoc.AllDoc, error) { n++; panic("boom") })
		if rpc.AsError(err).Code != rpc.CodeInternal {
			t.Fatalf("a panicking evaluation gave %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("evaluated %d times, want once", n)
	}
}
