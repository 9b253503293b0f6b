package render

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/internal/doctor"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Plural is one when n is 1, else many ("1 Session", "2 Sessions").
func Plural[N int | int64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// RelTime is how long ago ms (Unix milliseconds) was, for a person.
func RelTime(ms int64, now time.Time) string {
	if ms <= 0 {
		return "-"
	}
	d := now.Sub(time.UnixMilli(ms))
	switch {
	case d < 0:
		return "now"
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

// OneLine flattens s for a table cell, clipped to n runes.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// SessionName is how a person addresses a Session: its alias, else its id.
func SessionName(s rpc.Session) string {
	if s.Alias != "" {
		return s.Alias
	}
	return s.ID
}

// Table widths: session list -o text and --watch fit the terminal.
const (
	// DefaultTableWidth is the width when stdout is no terminal and
	// $COLUMNS names none.
	DefaultTableWidth = 120
	// TableGap separates the columns.
	TableGap = 2
)

// Session table columns.
const (
	colSession = iota
	colState
	colHarness
	colTitle
	colCreated
	colUpdated
	colLast
)

// SessionTable prints sessions as an aligned table; last, when set,
// gives a Session's latest result summary (the LAST RESULT column). A
// width above 0 bounds each line: the title, last-result and SESSION
// columns give up width (fitColumns), their cells clipped with "…";
// state, harness and the times are never clipped.
func SessionTable(w io.Writer, sessions []rpc.Session, now time.Time, last func(rpc.Session) string, width int) error {
	rows := [][]string{{"SESSION", "STATE", "HARNESS", "TITLE", "CREATED", "UPDATED"}}
	if last != nil {
		rows[0] = append(rows[0], "LAST RESULT")
	}
	for _, s := range sessions {
		row := []string{SessionName(s), s.State, s.Harness, OneLine(s.Title, 40),
			RelTime(s.CreatedAtMS, now), RelTime(s.UpdatedAtMS, now)}
		if last != nil {
			row = append(row, OneLine(last(s), 80))
		}
		rows = append(rows, row)
	}
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	if width > 0 {
		fitColumns(widths, width)
	}
	var b strings.Builder
	for _, row := range rows {
		b.Reset()
		for i, cell := range row {
			cell = clipCell(cell, widths[i])
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+TableGap))
			}
		}
		b.WriteByte('\n')
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	if len(sessions) == 0 {
		if _, err := io.WriteString(w, "(no Sessions)\n"); err != nil {
			return err
		}
	}
	return nil
}

// HostSessionTable prints sessions asked of several hosts as one
// SessionTable (fitting width) with a HOST column in front: rowHosts[i] is
// the host of sessions[i]; hosts, all the hosts asked, size the column.
func HostSessionTable(w io.Writer, sessions []rpc.Session, rowHosts, hosts []string, now time.Time, width int) {
	hw := len("HOST")
	for _, h := range hosts {
		hw = max(hw, len(h))
	}
	var buf strings.Builder
	SessionTable(&buf, sessions, now, nil, width-hw-TableGap)
	for i, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		host := "HOST"
		if i > 0 && i-1 < len(rowHosts) {
			host = rowHosts[i-1]
		} else if i > 0 {
			host = ""
		}
		fmt.Fprintf(w, "%-*s  %s\n", hw, host, line)
	}
}

// fitColumns narrows widths (of the session table's columns) until their
// sum with the gaps is at most width, or nothing more may give. In turn:
// title and last result (the wider of them each step) down to 20 columns,
// SESSION down to 27 (a derived alias's length), title and last result
// down to 8 and 12, SESSION down to 12. At those floors the table with a
// last result fits 80 columns.
func fitColumns(widths []int, width int) {
	total := TableGap * (len(widths) - 1)
	for _, n := range widths {
		total += n
	}
	for _, stage := range []map[int]int{
		{colTitle: 20, colLast: 20},
		{colSession: 27},
		{colTitle: 8, colLast: 12},
		{colSession: 12},
	} {
		for total > width {
			c := -1
			for _, col := range []int{colSession, colTitle, colLast} {
				floor, ok := stage[col]
				if ok && col < len(widths) && widths[col] > floor && (c < 0 || widths[col] > widths[c]) {
					c = col
				}
			}
			if c < 0 {
				break
			}
			widths[c]--
			total--
		}
	}
}

// clipCell is s cut to n runes, its last one "…" when cut.
func clipCell(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// ResultSummary is one line about a result: "#3 completed: first words".
func ResultSummary(r *rpc.Result) string {
	if r == nil {
		return "-"
	}
	s := fmt.Sprintf("#%d %s", r.ExecutionSeq, r.Status)
	switch {
	case r.Error != nil && r.Error.Message != "":
		s += ": " + OneLine(r.Error.Message, 50)
	case r.FinalText != nil && *r.FinalText != "":
		s += ": " + OneLine(*r.FinalText, 50)
	}
	return s
}

// Result prints a result for reading: a header line, then its
// final_text (or error) as it is.
func Result(w io.Writer, r rpc.Result, now time.Time) {
	fmt.Fprintf(w, "result #%d %s (%s)", r.ExecutionSeq, r.Status, RelTime(r.CompletedAtMS, now))
	if r.FinalTextComplete != nil && !*r.FinalTextComplete {
		off := 0
		if r.FinalTextOffset != nil {
			off = *r.FinalTextOffset
		}
		fmt.Fprintf(w, " [final_text from byte %d, continued in the next fetch]", off)
	}
	fmt.Fprintln(w)
	if r.Error != nil {
		fmt.Fprintf(w, "error %s: %s\n", r.Error.Code, r.Error.Message)
	}
	if u, _ := rpc.DecodeUsage(r.Usage); u != nil {
		fmt.Fprintf(w, "usage %s\n", Usage(r.Usage))
	}
	if r.Diff != nil {
		fmt.Fprintf(w, "diff %s\n", DiffStat(*r.Diff))
	}
	if r.FinalText != nil && *r.FinalText != "" {
		text := *r.FinalText
		fmt.Fprint(w, text)
		// A piece continued in the next fetch always ends with one added
		// line break, so joining the pieces is exact: drop it.
		if !strings.HasSuffix(text, "\n") || (r.FinalTextComplete != nil && !*r.FinalTextComplete) {
			fmt.Fprintln(w)
		}
	}
}

// Fetch prints a fetch document for a person: per Session its
// state, events and results, then where to continue.
func Fetch(w io.Writer, raw json.RawMessage, now time.Time) error {
	var doc rpc.FetchDocument
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	for i, b := range doc.Sessions {
		if i > 0 {
			fmt.Fprintln(w)
		}
		s := b.Session
		fmt.Fprintf(w, "%s  %s  %s  %q\n", SessionName(s), s.State, s.Harness, s.Title)
		for _, ev := range b.Events {
			line := fmt.Sprintf("  event %d %s", ev.Seq, ev.Type)
			if ev.ExecutionSeq != 0 {
				line += fmt.Sprintf(" #%d", ev.ExecutionSeq)
			}
			for _, extra := range []string{ev.Reason, ev.ResultStatus, ev.Tool, ev.Command} {
				if extra != "" {
					line += " " + OneLine(extra, 60)
				}
			}
			fmt.Fprintln(w, line)
		}
		if s.State == rpc.StateBlocked {
			if p := PendingLine(s.Pending); p != "" {
				fmt.Fprintf(w, "  pending: %s\n", p)
			}
			fmt.Fprintf(w, "  next: %s\n", AnswerLine(s))
		}
		for _, r := range b.Results {
			Result(w, r, now)
		}
		for _, g := range b.Gaps {
			fmt.Fprintf(w, "  gap: %s\n", OneLine(fmt.Sprint(g), 80))
		}
	}
	fmt.Fprintf(w, "reason %s, cursor %s", doc.Reason, doc.Cursor)
	if doc.HasMore {
		fmt.Fprint(w, ", has_more: fetch again with this cursor")
	}
	fmt.Fprintln(w)
	return nil
}

// Event prints one event for a person. Events carry no time of
// their own: a follower stamps each with the local time it printed it
// (received), and a read of history (received zero) shows none rather
// than one moment for events of an hour. alias, when set, gives a
// Session id's alias ("" for none): the Session is then "alias (id)".
func Event(w io.Writer, line []byte, received time.Time, alias func(id string) string) error {
	var ev rpc.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return err
	}
	who := ev.SessionID
	if alias != nil && who != "" {
		if a := alias(who); a != "" {
			who = OneLine(a, 40) + " (" + who + ")"
		}
	}
	s := fmt.Sprintf("%6d  %-22s %s", ev.Seq, ev.Type, who)
	if !received.IsZero() {
		s = received.Format("15:04:05") + "  " + s
	}
	if ev.ExecutionSeq != 0 {
		s += fmt.Sprintf(" #%d", ev.ExecutionSeq)
	}
	for _, extra := range []string{ev.Reason, ev.ResultStatus, ev.Tool, ev.Command} {
		if extra != "" {
			s += " " + OneLine(extra, 60)
		}
	}
	_, err := fmt.Fprintln(w, s)
	return err
}

// Read prints a session.read answer for a person.
func Read(w io.Writer, res rpc.SessionReadResult, now time.Time) {
	s := res.Session
	name := s.ID
	if s.Alias != "" {
		name = s.Alias + " (" + s.ID + ")"
	}
	fmt.Fprintf(w, "session  %s\ntitle    %s\nharness  %s", name, OneLine(s.Title, 120), s.Harness)
	if s.Model != "" {
		fmt.Fprintf(w, ", model %s", s.Model)
	}
	if s.Warm {
		fmt.Fprint(w, ", started on a warm spare")
	}
	fmt.Fprintf(w, "\nstate    %s (updated %s)\n", s.State, RelTime(s.UpdatedAtMS, now))
	if s.State == rpc.StateBlocked {
		if p := PendingLine(s.Pending); p != "" {
			fmt.Fprintf(w, "pending  %s (asked %s)\n", p, RelTime(s.Pending.AskedAtMS, now))
		}
		fmt.Fprintf(w, "answer   %s\n", AnswerLine(s))
	}
	if wt := s.Worktree; wt != nil {
		fmt.Fprintf(w, "worktree %s\n", Worktree(*wt))
	}
	r := res.Result
	if r == nil {
		fmt.Fprintln(w, "result   none retained yet")
		return
	}
	fmt.Fprintf(w, "result   #%d %s, finished %s", r.ExecutionSeq, r.Status, RelTime(r.CompletedAtMS, now))
	if r.StartedAtMS > 0 && r.CompletedAtMS >= r.StartedAtMS {
		fmt.Fprintf(w, " after %s", (time.Duration(r.CompletedAtMS-r.StartedAtMS) * time.Millisecond).Round(100*time.Millisecond))
	}
	fmt.Fprintln(w)
	if r.Error != nil {
		fmt.Fprintf(w, "error    %s: %s\n", r.Error.Code, OneLine(r.Error.Message, 400))
	}
	fmt.Fprintf(w, "usage    %s\n", Usage(r.Usage))
	if r.Diff != nil {
		fmt.Fprintf(w, "diff     %s\n", DiffStat(*r.Diff))
	}
	FinalText(w, r)
}

// PendingLine is what a blocked Session asks, on one line: "permission
// to run Bash: rm -rf build", or a question and its options; "" for none.
func PendingLine(p *rpc.Pending) string {
	if p == nil {
		return ""
	}
	if p.Kind == rpc.PendingPermission {
		s := "permission to run " + OneLine(p.Tool, 60)
		if p.Input != "" {
			s += ": " + OneLine(p.Input, 300)
		}
		return s
	}
	s := "question: " + OneLine(p.Question, 300)
	if len(p.Options) > 0 {
		opts := make([]string, len(p.Options))
		for i, o := range p.Options {
			opts[i] = OneLine(o.ID, 40) + " " + strconv.Quote(OneLine(o.Label, 60))
		}
		s += " (options: " + strings.Join(opts, ", ") + ")"
	}
	return s
}

// AnswerLine says how to answer the blocked Session s: the respond
// command when dlgt knows its request, and attach either way.
func AnswerLine(s rpc.Session) string {
	ref := ShellWord(SessionName(s))
	if s.Pending == nil {
		return "only in its terminal: dlgt session attach " + ref
	}
	if s.Pending.Kind == rpc.PendingPermission {
		return "dlgt session respond " + ref + " --allow (or --deny --message WHY), or in its terminal: dlgt session attach " + ref
	}
	return "dlgt session respond " + ref + " --option ID, or in its terminal: dlgt session attach " + ref
}

// Worktree is a Session's worktree on one line: branch, path, base.
func Worktree(wt rpc.Worktree) string {
	base := wt.BaseCommit
	if len(base) > 12 {
		base = base[:12]
	}
	s := fmt.Sprintf("branch %s at %s (from %s of %s)", wt.Branch, wt.Path, base, wt.Repo)
	if wt.Removed {
		s += ", removed"
	}
	return s
}

// DiffStat is a diff summary for a person: "2 files changed, 5
// insertions(+), 1 deletion(-), committed".
func DiffStat(d rpc.DiffSummary) string {
	if d.Error != "" {
		return "unknown: " + OneLine(d.Error, 200)
	}
	s := fmt.Sprintf("%d %s changed, %d %s(+), %d %s(-)", d.Files, Plural(d.Files, "file", "files"),
		d.Insertions, Plural(d.Insertions, "insertion", "insertions"), d.Deletions, Plural(d.Deletions, "deletion", "deletions"))
	if d.Committed {
		s += ", committed"
	} else {
		s += ", nothing committed"
	}
	return s
}

// SessionDiff prints a session.diff answer's stat for a person.
func SessionDiff(w io.Writer, r rpc.SessionDiffResult) error {
	fmt.Fprintf(w, "%s  %s\n", SessionName(r.Session), Worktree(r.Worktree))
	fmt.Fprintf(w, "diff  %s\n", DiffStat(r.Summary))
	if r.Truncated {
		fmt.Fprintln(w, "(the full diff is longer than max_bytes)")
	}
	return nil
}

// FinalText prints a result's final text as it is, or says there is
// none.
func FinalText(w io.Writer, r *rpc.Result) {
	switch {
	case r.FinalText == nil:
		fmt.Fprintln(w, "final text: none recorded")
	case *r.FinalText == "":
		fmt.Fprintln(w, "final text: empty")
	default:
		fmt.Fprintf(w, "final text (%s):\n", r.FinalTextSource)
		fmt.Fprint(w, *r.FinalText)
		if !strings.HasSuffix(*r.FinalText, "\n") {
			fmt.Fprintln(w)
		}
	}
}

// Usage is a result's usage for a person: "1,234 tokens in 2 requests
// (input 1,000, cache read 0, cache write 0, output 234 of which 100
// reasoning)", or why there is none.
func Usage(raw json.RawMessage) string {
	u, err := rpc.DecodeUsage(raw)
	switch {
	case err != nil:
		return "unreadable (" + err.Error() + ")"
	case u == nil:
		return "not recorded by the harness"
	}
	s := fmt.Sprintf("%s tokens in %d model %s (input %s, cache read %s, cache write %s, output %s",
		thousands(u.TotalTokens), u.Requests, Plural(u.Requests, "request", "requests"), thousands(u.InputTokens), thousands(u.CacheReadInputTokens),
		thousands(u.CacheCreationInputTokens), thousands(u.OutputTokens))
	if u.ReasoningOutputTokens > 0 {
		s += " of which " + thousands(u.ReasoningOutputTokens) + " reasoning"
	}
	return s + ")"
}

// thousands writes n with comma separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// -o text for the commands that change a Session: create and send print
// their receipt and the command that waits for the result; restart, stop
// and cancel print the Session's state and what became of its work.

// Receipt prints a session.create or session.send receipt for a
// person.
func Receipt(w io.Writer, r rpc.Receipt) error {
	name := SessionName(r.Session)
	warm := ""
	if r.Session.Warm {
		warm = "  (on a warm spare)"
	}
	fmt.Fprintf(w, "%s  %s  %s  execution #%d%s\n", name, r.Session.State, r.Session.Harness, r.ExecutionSeq, warm)
	prompt := r.Submission
	switch r.Submission {
	case rpc.SubmissionConfirmed:
		prompt = "confirmed: the harness took it"
	case rpc.SubmissionPending:
		prompt = "pending: delivered, not acknowledged by the harness yet; repeat this command (same --request-id) to refresh it, never a new id"
	}
	switch {
	case r.Steered:
		prompt = "steered: typed into the running execution #" + strconv.FormatUint(r.ExecutionSeq, 10) + "; its result is that execution's"
	case r.Queued && r.Submission == rpc.SubmissionPending:
		prompt = "queued: runs as execution #" + strconv.FormatUint(r.ExecutionSeq, 10) + " once the running one ends (session cancel clears the queue)"
	}
	if r.Replayed {
		prompt += " (a replay: this request id was accepted before)"
	}
	fmt.Fprintf(w, "prompt  %s\n", prompt)
	fmt.Fprintf(w, "next    dlgt session fetch %s --cursor %s --until result --wait 10m\n", ShellWord(name), r.Cursor)
	return nil
}

// SessionResult prints a session.restart, session.stop or
// session.cancel answer for a person.
func SessionResult(w io.Writer, r rpc.SessionResult) error {
	fmt.Fprintf(w, "%s  %s  %s\n", SessionName(r.Session), r.Session.State, r.Session.Harness)
	if res := r.Result; res != nil {
		fmt.Fprintf(w, "result  #%d %s", res.ExecutionSeq, res.Status)
		if res.Error != nil {
			fmt.Fprintf(w, ": %s", OneLine(res.Error.Message, 200))
		}
		fmt.Fprintln(w)
	}
	if r.Cursor != "" {
		fmt.Fprintf(w, "cursor  %s\n", r.Cursor)
	}
	return nil
}

// Cancel prints a session.cancel answer for a person. The daemon
// answers a cancel with nothing to interrupt (an idle, stopped or failed
// Session) with the Session alone, no result: that is said, not left to
// read as a cancellation.
func Cancel(w io.Writer, r rpc.SessionResult) error {
	if err := SessionResult(w, r); err != nil {
		return err
	}
	if r.Result == nil {
		fmt.Fprintf(w, "result  none: nothing to cancel, no execution was active (the Session is %s)\n", r.Session.State)
	}
	return nil
}

// Respond prints a session.respond answer for a person: what was
// answered, and the Session's state now.
func Respond(w io.Writer, r rpc.SessionRespondResult) error {
	what := r.Decision
	switch r.Decision {
	case rpc.DecisionAllow:
		what = "allowed"
	case rpc.DecisionDeny:
		what = "denied"
	}
	if r.Option != "" {
		what = "answered " + r.Option
	}
	fmt.Fprintf(w, "%s  %s", what, r.PendingID)
	if r.Replayed {
		fmt.Fprint(w, "  (replayed: answered before)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s  %s  %s\n", SessionName(r.Session), r.Session.State, r.Session.Harness)
	return nil
}

// ShellWord is s as one word of a shell command line: as it is when it
// needs no quoting (aliases, provider ids), else single-quoted.
func ShellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// yesNo is a boolean table cell.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// orDash is a table cell that may be empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// HarnessTable prints harness.list for a person.
func HarnessTable(w io.Writer, res rpc.HarnessListResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HARNESS\tAVAILABLE\tVERSION\tTESTED\tSCREEN\tLIFECYCLE\tBINARY")
	for _, h := range res.Harnesses {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Name, yesNo(h.Available), orDash(h.Version),
			orDash(h.TestedVersion), orDash(h.ScreenMode), orDash(h.LifecycleSource), orDash(h.Binary))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch res.Environment {
	case rpc.HarnessEnvCaller:
		_, err := fmt.Fprintln(w, "(binaries as a session create from this environment finds them)")
		return err
	case rpc.HarnessEnvDaemon:
		_, err := fmt.Fprintln(w, "(binaries as the daemon's own environment finds them; a create from another shell uses that shell's PATH and DLGT_*_BIN)")
		return err
	}
	return nil
}

// ModelTable prints model.list for a person.
func ModelTable(w io.Writer, res rpc.ModelListResult) error {
	fmt.Fprintf(w, "%s models (from %s)\n", res.Harness, orDash(res.Source))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tNAME\tDEFAULT\tHIDDEN\tALIASES")
	for _, m := range res.Models {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.ID, orDash(OneLine(m.DisplayName, 40)), yesNo(m.Default),
			yesNo(m.Hidden), orDash(strings.Join(m.Aliases, ", ")))
	}
	if len(res.Models) == 0 {
		fmt.Fprintln(tw, "(no models)")
	}
	return tw.Flush()
}

// ProfileTable prints the client's profiles for a person; like the
// JSON, it names environment variables but never shows their values. file
// is where they are defined, named when there are none.
func ProfileTable(w io.Writer, res rpc.ProfileListResult, file string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tHARNESS\tMODEL\tEFFORT\tHARNESS OPTIONS\tENVIRONMENT")
	for _, p := range res.Profiles {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, orDash(p.Harness), orDash(p.Model), orDash(p.Effort),
			orDash(strings.Join(p.HarnessOptions, " ")), orDash(strings.Join(p.EnvironmentKeys, ", ")))
	}
	if len(res.Profiles) == 0 {
		fmt.Fprintf(tw, "(no profiles: define them in %s, see dlgt profiles --help)\n", file)
	}
	return tw.Flush()
}

// Scrollback prints a scrollback page as the terminal showed it,
// oldest row first, one row per line, so it pipes into less or grep. What
// a person needs to read on goes to errw: the --before of the older page,
// and a note when the harness draws on the alternate screen.
func Scrollback(w, errw io.Writer, session string, page rpc.ScrollbackPage) error {
	for _, line := range page.Lines {
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	if page.AlternateScreen {
		fmt.Fprintln(errw, "dlgt: the harness draws on the alternate screen now; what it shows there never becomes history")
	}
	if page.Before != "" {
		fmt.Fprintf(errw, "dlgt: older rows: dlgt scrollback %s --before %s -o text\n", session, page.Before)
	}
	return nil
}

// Doctor prints doctor's checks as a checklist: a mark, the name
// and the detail, and under a failed check or a warning the fix. When some
// checks were made on another machine (--host), both ends have checks of
// the same names, so each name says its machine: "(this machine)" or
// "(on HOST)".
func Doctor(w io.Writer, checks []doctor.Check) {
	remote := slices.ContainsFunc(checks, func(c doctor.Check) bool { return c.Host != "" })
	failed := 0
	for _, c := range checks {
		if remote {
			if c.Host != "" {
				c.Name += " (on " + c.Host + ")"
			} else {
				c.Name += " (this machine)"
			}
		}
		mark := "[ok]  "
		switch {
		case !c.OK:
			mark = "[FAIL]"
			failed++
		case c.Warning:
			mark = "[warn]"
		}
		fmt.Fprintf(w, "%s %s: %s\n", mark, c.Name, c.Detail)
		if (!c.OK || c.Warning) && c.Fix != "" {
			fmt.Fprintf(w, "       fix: %s\n", c.Fix)
		}
	}
	if failed == 0 {
		fmt.Fprintln(w, "all checks passed")
	} else {
		fmt.Fprintf(w, "%d of %d checks failed\n", failed, len(checks))
	}
}
