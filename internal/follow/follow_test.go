package follow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// A state file round-trips a seq; a missing one is no seq, and one that
// holds anything else is INVALID_ARGUMENT naming the file.
func TestStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seq")
	if _, ok, err := ReadState(path); ok || err != nil {
		t.Fatalf("missing file: %v %v", ok, err)
	}
	if err := WriteState(path, 42); err != nil {
		t.Fatal(err)
	}
	if n, ok, err := ReadState(path); n != 42 || !ok || err != nil {
		t.Fatalf("ReadState = %d %v %v", n, ok, err)
	}
	os.WriteFile(path, []byte("not a seq"), 0o600)
	if _, _, err := ReadState(path); !errors.Is(err, rpc.ErrInvalidArgument) || !strings.Contains(err.Error(), path) {
		t.Fatalf("garbage: %v", err)
	}
}

// The watermark stores the highest seq through which every event was
// handled: a slow command holds it back, later ones never overtake it.
func TestWatermark(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seq")
	w := &watermark{path: path}
	w.queued(5)
	w.queued(6)
	w.done(6)
	if _, ok, _ := ReadState(path); ok && w.stored > 4 {
		t.Fatalf("stored %d while 5 runs", w.stored)
	}
	w.done(5)
	if n, _, _ := ReadState(path); n != 6 {
		t.Fatalf("stored %d after both, want 6", n)
	}
}

// An --exec command's output costs at most execOutputCap bytes, however
// it is written (os/exec copies a pipe with io.Copy, which would use a
// buffer's ReadFrom and bypass a bound on Write alone).
func TestExecOutputBounded(t *testing.T) {
	var stderr strings.Builder
	opts := Options{Exec: "head -c 1000000 /dev/zero | tr '\\0' x", ExecTimeout: time.Minute, Stderr: &stderr}
	runExec(opts, execJob{seq: 1, line: []byte(`{"seq":1}`), f: Fields{Seq: 1, Type: "session.idle"}})
	if n := stderr.Len(); n > execOutputCap+1 || n < execOutputCap {
		t.Fatalf("the command's output cost %d bytes, want the first %d", n, execOutputCap)
	}
}
