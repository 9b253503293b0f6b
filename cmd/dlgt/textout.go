package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Output for people: JSON stays the default (agents and scripts parse it);
// -o text prints the same answer as a table or a few readable lines.
// Failures keep their one JSON line either way.

// addOutputFlag registers -o/--output on a command people read.
func addOutputFlag(cmd *cobra.Command) {
	cmd.Flags().StringP("output", "o", "json", "output format: json (one JSON line, the default) or text (for people)")
}

// textOutput reports whether the command was asked for -o text; any value
// other than json or text is a usage error.
func textOutput(cmd *cobra.Command) (bool, error) {
	v, _ := cmd.Flags().GetString("output")
	switch v {
	case "", "json":
		return false, nil
	case "text":
		return true, nil
	}
	return false, usageError("--output must be json or text, not %q", v)
}

// plural is one when n is 1, else many ("1 Session", "2 Sessions").
func plural[N int | int64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// relTime is how long ago ms (Unix milliseconds) was, for a person.
func relTime(ms int64, now time.Time) string {
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

// oneLine flattens s for a table cell, clipped to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// sessionName is how a person addresses a Session: its alias, else its id.
func sessionName(s rpc.Session) string {
	if s.Alias != "" {
		return s.Alias
	}
	return s.ID
}

// Table widths: session list -o text and --watch fit the terminal.
const (
	// defaultTableWidth is the width when stdout is no terminal and
	// $COLUMNS names none.
	defaultTableWidth = 120
	// tableGap separates the columns.
	tableGap = 2
)

// tableWidth is how many columns a table written to w may take: the
// terminal's width when w is one, else $COLUMNS when that is a positive
// number, else defaultTableWidth.
func (e *env) tableWidth(w any) int {
	if e.terminal(w) {
		if _, cols, ok := terminalSize(w); ok {
			return cols
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(e.getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	return defaultTableWidth
}

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

// writeSessionTable prints sessions as an aligned table; last, when set,
// gives a Session's latest result summary (the LAST RESULT column). A
// width above 0 bounds each line: the title, last-result and SESSION
// columns give up width (fitColumns), their cells clipped with "…";
// state, harness and the times are never clipped.
func writeSessionTable(w io.Writer, sessions []rpc.Session, now time.Time, last func(rpc.Session) string, width int) error {
	rows := [][]string{{"SESSION", "STATE", "HARNESS", "TITLE", "CREATED", "UPDATED"}}
	if last != nil {
		rows[0] = append(rows[0], "LAST RESULT")
	}
	for _, s := range sessions {
		row := []string{sessionName(s), s.State, s.Harness, oneLine(s.Title, 40),
			relTime(s.CreatedAtMS, now), relTime(s.UpdatedAtMS, now)}
		if last != nil {
			row = append(row, oneLine(last(s), 80))
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
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+tableGap))
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

// fitColumns narrows widths (of the session table's columns) until their
// sum with the gaps is at most width, or nothing more may give. In turn:
// title and last result (the wider of them each step) down to 20 columns,
// SESSION down to 27 (a derived alias's length), title and last result
// down to 8 and 12, SESSION down to 12. At those floors the table with a
// last result fits 80 columns.
func fitColumns(widths []int, width int) {
	total := tableGap * (len(widths) - 1)
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

// resultSummary is one line about a result: "#3 completed: first words".
func resultSummary(r *rpc.Result) string {
	if r == nil {
		return "-"
	}
	s := fmt.Sprintf("#%d %s", r.ExecutionSeq, r.Status)
	switch {
	case r.Error != nil && r.Error.Message != "":
		s += ": " + oneLine(r.Error.Message, 50)
	case r.FinalText != nil && *r.FinalText != "":
		s += ": " + oneLine(*r.FinalText, 50)
	}
	return s
}

// writeResultText prints a result for reading: a header line, then its
// final_text (or error) as it is.
func writeResultText(w io.Writer, r rpc.Result, now time.Time) {
	fmt.Fprintf(w, "result #%d %s (%s)", r.ExecutionSeq, r.Status, relTime(r.CompletedAtMS, now))
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
		fmt.Fprintf(w, "usage %s\n", usageText(r.Usage))
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

// writeFetchText prints a fetch document for a person: per Session its
// state, events and results, then where to continue.
func writeFetchText(w io.Writer, raw json.RawMessage, now time.Time) error {
	var doc rpc.FetchDocument
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	for i, b := range doc.Sessions {
		if i > 0 {
			fmt.Fprintln(w)
		}
		s := b.Session
		fmt.Fprintf(w, "%s  %s  %s  %q\n", sessionName(s), s.State, s.Harness, s.Title)
		for _, ev := range b.Events {
			line := fmt.Sprintf("  event %d %s", ev.Seq, ev.Type)
			if ev.ExecutionSeq != 0 {
				line += fmt.Sprintf(" #%d", ev.ExecutionSeq)
			}
			for _, extra := range []string{ev.Reason, ev.ResultStatus, ev.Tool, ev.Command} {
				if extra != "" {
					line += " " + oneLine(extra, 60)
				}
			}
			fmt.Fprintln(w, line)
		}
		for _, r := range b.Results {
			writeResultText(w, r, now)
		}
		for _, g := range b.Gaps {
			fmt.Fprintf(w, "  gap: %s\n", oneLine(fmt.Sprint(g), 80))
		}
	}
	fmt.Fprintf(w, "reason %s, cursor %s", doc.Reason, doc.Cursor)
	if doc.HasMore {
		fmt.Fprint(w, ", has_more: fetch again with this cursor")
	}
	fmt.Fprintln(w)
	return nil
}

// writeDoctorText prints doctor's checks as a checklist: a mark, the name
// and the detail, and under a failed check or a warning the fix. When some
// checks were made on another machine (--host), both ends have checks of
// the same names, so each name says its machine: "(this machine)" or
// "(on HOST)".
func writeDoctorText(w io.Writer, checks []doctorCheck) {
	remote := slices.ContainsFunc(checks, func(c doctorCheck) bool { return c.Host != "" })
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

// writeEventText prints one event for a person. Events carry no time of
// their own: a follower stamps each with the local time it printed it
// (received), and a read of history (received zero) shows none rather
// than one moment for events of an hour.
func writeEventText(w io.Writer, line []byte, received time.Time) error {
	var ev rpc.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return err
	}
	s := fmt.Sprintf("%6d  %-22s %s", ev.Seq, ev.Type, ev.SessionID)
	if !received.IsZero() {
		s = received.Format("15:04:05") + "  " + s
	}
	if ev.ExecutionSeq != 0 {
		s += fmt.Sprintf(" #%d", ev.ExecutionSeq)
	}
	for _, extra := range []string{ev.Reason, ev.ResultStatus, ev.Tool, ev.Command} {
		if extra != "" {
			s += " " + oneLine(extra, 60)
		}
	}
	_, err := fmt.Fprintln(w, s)
	return err
}
