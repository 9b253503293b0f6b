package render

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/dlgt-dev/dlgt/internal/setup"
	"github.com/dlgt-dev/dlgt/rpc"
)

// DaemonStatus writes a running daemon's status for a person (dlgt daemon
// status -o text).
func DaemonStatus(w io.Writer, st rpc.DaemonStatus) error {
	up := (time.Duration(st.UptimeMS) * time.Millisecond).Round(time.Second)
	_, err := fmt.Fprintf(w, "running  dlgt %s (commit %s), pid %d, up %s\nholds    %d %s, %d %s open\nsocket   %s\nhome     %s\n",
		st.Version, st.Commit, st.PID, up, st.Sessions, Plural(st.Sessions, "Session", "Sessions"),
		st.Connections, Plural(st.Connections, "connection", "connections"), st.Socket, st.Home)
	if err == nil && st.SparesReady+st.SparesStarting > 0 {
		_, err = fmt.Fprintf(w, "warm     %d ready, %d starting (dlgt session warm)\n", st.SparesReady, st.SparesStarting)
	}
	if err == nil && st.SpareClaims+st.SpareMisses+st.SpareShapeMisses > 0 {
		_, err = fmt.Fprintf(w, "creates  %d claimed a warm spare, %d found their spares still starting, %d found spares of another shape only (environment, directory, model or options differ)\n",
			st.SpareClaims, st.SpareMisses, st.SpareShapeMisses)
	}
	return err
}

// Warm writes session.warm's answer for a person.
func Warm(w io.Writer, r rpc.SessionWarmResult) error {
	_, err := fmt.Fprintf(w, "shape %s: %d %s kept (%d ready, %d starting), %.1f MiB resident, idle after %ds\n",
		r.Shape, r.Spares, Plural(r.Spares, "spare", "spares"), r.Ready, r.Starting, float64(r.RSSBytes)/(1<<20), r.IdleMS/1000)
	if err == nil && r.LastError != "" {
		_, err = fmt.Fprintf(w, "last spare launch failed: %s\n", r.LastError)
	}
	return err
}

// SetupFiles writes what an install did to each file: unchanged, or
// written (with its backup) and the change as a diff.
func SetupFiles(w io.Writer, files []setup.File) {
	for _, f := range files {
		if f.Status == setup.Unchanged {
			fmt.Fprintf(w, "unchanged %s (it already has this entry)\n", f.Path)
			continue
		}
		fmt.Fprintf(w, "written   %s", f.Path)
		if f.Backup != "" {
			fmt.Fprintf(w, " (backup %s)", f.Backup)
		}
		fmt.Fprintf(w, "\n%s", f.Diff)
	}
}

// SkillTargets writes skill install's targets, one line each, then the
// command that fixes each stale or missing one.
func SkillTargets(w io.Writer, targets []setup.SkillTarget) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range targets {
		line := fmt.Sprintf("%s\t%s\t%s", t.Harness, t.Status, t.Path)
		if t.Detail != "" {
			line += "\t(" + t.Detail + ")"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	for _, t := range targets {
		if t.Status == setup.SkillStale || t.Status == setup.SkillMissing {
			fmt.Fprintf(w, "fix: dlgt skill install --harness %s\n", t.Harness)
		}
	}
}

// Results writes a Session's retained results for a person (session
// results -o text): each one's status, when it finished, its error and
// its final text.
func Results(w io.Writer, session string, results []rpc.Result, now time.Time) {
	fmt.Fprintf(w, "session  %s: %d retained %s\n", session, len(results), Plural(len(results), "result", "results"))
	for _, r := range results {
		fmt.Fprintf(w, "\nresult   #%d %s, finished %s\n", r.ExecutionSeq, r.Status, RelTime(r.CompletedAtMS, now))
		if r.Error != nil {
			fmt.Fprintf(w, "error    %s: %s\n", r.Error.Code, OneLine(r.Error.Message, 400))
		}
		FinalText(w, &r)
	}
}
