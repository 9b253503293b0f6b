package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dlgt-dev/dlgt/pty"
	"github.com/dlgt-dev/dlgt/store"
	"github.com/dlgt-dev/dlgt/vt"
	"github.com/dlgt-dev/dlgt/vt/vttest"
)

// Ingest benchmark: the same ~50 MB of realistic terminal output pushed
// through a bare PTY (the physical limit), through tmux, and through dlgt's
// own pipeline (PTY → RawLog + vt.Screen → RowLog, until every row is
// committed). Run with:
//
//	go test -run '^$' -bench Ingest -benchtime 1x ./daemon/

const (
	ingestSize = 50 << 20
	ingestRows = 40
	ingestCols = 120
)

// genIngestStream is the stream vt's own benchmark uses: 14-word lines, 30%
// with an SGR colour span, CRLF endings, cursor-up rewrites and CR spinners.
func genIngestStream(size int) []byte { return vttest.IngestStream(size) }

var ingestData = sync.OnceValue(func() []byte { return genIngestStream(ingestSize) })

func TestIngestStreamShape(t *testing.T) {
	a, b := genIngestStream(1<<20), genIngestStream(1<<20)
	if !bytes.Equal(a, b) {
		t.Fatal("generator is not deterministic")
	}
	if len(a) < 1<<20 || len(a) > 1<<20+512 {
		t.Fatalf("len = %d, want about %d", len(a), 1<<20)
	}
	if !bytes.HasSuffix(a, []byte("\r\n")) {
		t.Error("stream does not end with CRLF")
	}
	if bytes.Count(a, []byte("\r\n")) < 1000 {
		t.Error("too few CRLF line endings")
	}
	if !bytes.Contains(a, []byte("\x1b[38;5;")) || !bytes.Contains(a, []byte("\x1b[0m")) {
		t.Error("no SGR colour span")
	}
	if !bytes.Contains(a, []byte("\x1b[2A")) || !bytes.Contains(a, []byte("\r\x1b[2K")) {
		t.Error("no cursor-up rewrite or CR spinner redraw")
	}
	if bytes.Contains(bytes.ReplaceAll(a, []byte("\r\n"), nil), []byte("\n")) {
		t.Error("bare LF line ending")
	}
}

func BenchmarkIngest(b *testing.B) {
	data := ingestData()
	file := filepath.Join(b.TempDir(), "stream.txt")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("raw-pty", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		buf := make([]byte, 64<<10)
		for b.Loop() {
			proc := startCat(b, file)
			var got int64
			for {
				n, err := proc.Read(buf)
				got += int64(n)
				if err != nil {
					if !errors.Is(err, io.EOF) {
						b.Fatal(err)
					}
					break
				}
			}
			proc.Wait()
			proc.Close()
			if got < int64(len(data)) {
				b.Fatalf("read %d bytes, want >= %d", got, len(data))
			}
		}
	})
	b.Run("tmux", func(b *testing.B) {
		if _, err := exec.LookPath("tmux"); err != nil {
			b.Skip("tmux not on PATH")
		}
		b.SetBytes(int64(len(data)))
		cfg := filepath.Join(b.TempDir(), "tmux.conf")
		if err := os.WriteFile(cfg, []byte("set-option -g history-limit 10000\n"), 0o600); err != nil {
			b.Fatal(err)
		}
		env := make([]string, 0, len(os.Environ()))
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
				env = append(env, kv)
			}
		}
		var seq atomic.Int64
		for b.Loop() {
			sock := fmt.Sprintf("dlgt-ingest-%d-%d", os.Getpid(), seq.Add(1))
			tmux := func(args ...string) *exec.Cmd {
				c := exec.Command("tmux", append([]string{"-L", sock, "-f", cfg}, args...)...)
				c.Env = env
				return c
			}
			shell := fmt.Sprintf("cat '%s'; tmux wait-for -S done", file)
			if out, err := tmux("new-session", "-d", "-x", fmt.Sprint(ingestCols), "-y", fmt.Sprint(ingestRows), shell).CombinedOutput(); err != nil {
				b.Fatalf("tmux new-session: %v: %s", err, out)
			}
			out, err := tmux("wait-for", "done").CombinedOutput()
			b.StopTimer()
			if err != nil {
				b.Errorf("tmux wait-for: %v: %s", err, out)
			}
			tmux("kill-server").Run()
			b.StartTimer()
		}
	})
	b.Run("dlgt", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		dir := b.TempDir()
		db, err := store.Open(filepath.Join(dir, "state.db"), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		var commits atomic.Int64 // one session: one hook call per commit
		db.SetCommitHook(func(string, uint64) { commits.Add(1) })
		var newHeap, idleHeap float64
		i := 0
		for b.Loop() {
			b.StopTimer()
			uid := fmt.Sprintf("bench%d", i)
			i++
			before := heapInuse()
			rows, err := db.Rows(uid)
			if err != nil {
				b.Fatal(err)
			}
			raw, err := store.OpenRawLog(dir, uid, 0)
			if err != nil {
				b.Fatal(err)
			}
			var stable atomic.Int64
			screen := vt.New(ingestRows, ingestCols, vt.Callbacks{
				Stable: func(r []string) {
					stable.Add(int64(len(r)))
					rows.Append(0, r...)
				},
			})
			created := heapInuse()
			b.StartTimer()

			proc := startCat(b, file)
			if err := proc.Pump(make([]byte, pumpChunk), func(chunk []byte) {
				if _, werr := raw.Write(chunk); werr != nil {
					b.Fatal(werr)
				}
				screen.Write(chunk)
			}); err != nil && !errors.Is(err, io.EOF) {
				b.Fatal(err)
			}
			if err := rows.Flush(); err != nil {
				b.Fatal(err)
			}

			b.StopTimer()
			proc.Wait()
			proc.Close()
			if c := rows.Committed(); c != uint64(stable.Load()) || c == 0 {
				b.Fatalf("committed %d rows, Stable delivered %d", c, stable.Load())
			}
			idle := heapInuse()
			newHeap += float64(created - before)
			idleHeap += float64(idle - before)
			goruntime.KeepAlive(screen)
			raw.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(commits.Load())/float64(i), "commits/op")
		b.ReportMetric(newHeap/float64(i), "heapB/session-new")
		b.ReportMetric(idleHeap/float64(i), "heapB/session-idle")
	})
}

func startCat(b *testing.B, file string) *pty.Process {
	b.Helper()
	proc, err := pty.Start(pty.Options{
		Argv: []string{"cat", file},
		Env:  []string{"PATH=" + os.Getenv("PATH")},
		Rows: ingestRows,
		Cols: ingestCols,
	})
	if err != nil {
		b.Fatal(err)
	}
	return proc
}

// heapInuse returns HeapInuse after a full collection.
func heapInuse() int64 {
	goruntime.GC()
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}
