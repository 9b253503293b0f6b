package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/rpc"
)

// -o text for the listing commands (harnesses, models, profiles) and for
// scrollback: the same answer as the JSON line, laid out for a person.

// callAndPrintAs is callAndPrint for a command with -o text: one request,
// then the ok:true line, or with -o text the result decoded as T and
// written by write. Failures keep their JSON line and exit status.
func callAndPrintAs[T any](e *env, cmd *cobra.Command, method string, params any, write func(io.Writer, T) error) error {
	text, err := textOutput(cmd)
	if err != nil {
		return printFailure(cmd, err)
	}
	raw, err := e.call(cmd.Context(), method, params)
	if err != nil {
		return printFailure(cmd, err)
	}
	if !text {
		return printOK(cmd, raw)
	}
	var res T
	if err := json.Unmarshal(raw, &res); err != nil {
		return printFailure(cmd, rpc.Errorf(rpc.CodeInternal, "unexpected %s result: %v", method, err))
	}
	return write(cmd.OutOrStdout(), res)
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

// writeHarnessTable prints harness.list for a person.
func writeHarnessTable(w io.Writer, res rpc.HarnessListResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HARNESS\tAVAILABLE\tVERSION\tTESTED\tSCREEN\tLIFECYCLE\tBINARY")
	for _, h := range res.Harnesses {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Name, yesNo(h.Available), orDash(h.Version),
			orDash(h.TestedVersion), orDash(h.ScreenMode), orDash(h.LifecycleSource), orDash(h.Binary))
	}
	return tw.Flush()
}

// writeModelTable prints model.list for a person.
func writeModelTable(w io.Writer, res rpc.ModelListResult) error {
	fmt.Fprintf(w, "%s models (from %s)\n", res.Harness, orDash(res.Source))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tNAME\tDEFAULT\tHIDDEN\tALIASES")
	for _, m := range res.Models {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.ID, orDash(oneLine(m.DisplayName, 40)), yesNo(m.Default),
			yesNo(m.Hidden), orDash(strings.Join(m.Aliases, ", ")))
	}
	if len(res.Models) == 0 {
		fmt.Fprintln(tw, "(no models)")
	}
	return tw.Flush()
}

// writeProfileTable prints the client's profiles for a person; like the
// JSON, it names environment variables but never shows their values. file
// is where they are defined, named when there are none.
func writeProfileTable(w io.Writer, res rpc.ProfileListResult, file string) error {
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

// writeScrollbackText prints a scrollback page as the terminal showed it,
// oldest row first, one row per line, so it pipes into less or grep. What
// a person needs to read on goes to errw: the --before of the older page,
// and a note when the harness draws on the alternate screen.
func writeScrollbackText(w, errw io.Writer, session string, page rpc.ScrollbackPage) error {
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
