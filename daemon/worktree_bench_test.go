package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// bigRepo is a repository of n committed files (100 per directory, a few
// lines each), as a mid-sized project's checkout.
func bigRepo(b testing.TB, n int) string {
	b.Helper()
	repo := newGitRepo(b)
	for i := 0; i < n; i++ {
		dir := filepath.Join(repo, "src", "d"+strconv.Itoa(i/100))
		if i%100 == 0 {
			os.MkdirAll(dir, 0o755)
		}
		os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)+".go"), []byte(fmt.Sprintf("package d\n\n// file %d\nconst C%d = %d\n", i, i, i)), 0o644)
	}
	gitT(b, repo, "add", "-A")
	gitT(b, repo, "commit", "-q", "-m", "many files")
	return repo
}

// BenchmarkCreateWorktree measures session.create (the fake harness: its
// launch, ready and the first prompt's acceptance) in a repository of
// 10,000 files, without a worktree and with one (git worktree add of the
// whole tree first), and the worktree's removal. Each iteration's Session
// is stopped (and its worktree removed) outside the timer.
//
//	go test -run '^$' -bench BenchmarkCreateWorktree -benchtime 10x ./daemon/
func BenchmarkCreateWorktree(b *testing.B) {
	td := startTestDaemon(b)
	start := time.Now()
	repo := bigRepo(b, 10000)
	b.Logf("made a repository of 10,000 files in %s", time.Since(start).Round(time.Millisecond))
	for _, wt := range []bool{false, true} {
		name := "plain"
		if wt {
			name = "worktree"
		}
		b.Run(name, func(b *testing.B) {
			var removal time.Duration
			for i := 0; i < b.N; i++ {
				p := rpc.SessionCreateParams{
					Title: "bench", Harness: "claude", Cwd: repo, Prompt: "hi",
					RequestID: fmt.Sprintf("bench-%s-%d", name, i), Environment: td.env,
				}
				if wt {
					p.Worktree = &rpc.WorktreeOption{}
				}
				var r rpc.Receipt
				td.mustCall(rpc.MethodSessionCreate, p, &r)
				b.StopTimer()
				td.waitResult(b, r.Session.ID, r.Cursor)
				t0 := time.Now()
				td.mustCall(rpc.MethodSessionStop, rpc.SessionStopParams{Session: r.Session.ID, RemoveWorktree: wt, Force: wt}, nil)
				removal += time.Since(t0)
				b.StartTimer()
			}
			b.ReportMetric(float64(removal.Milliseconds())/float64(b.N), "stop-ms/op")
		})
	}
}
