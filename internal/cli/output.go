package cli

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// PrintOK prints {"ok":true,...fields of result} as one compact line (or
// indented with --pretty). result must encode as a JSON object.
func PrintOK(cmd *cobra.Command, result any) error { return PrintDoc(cmd, true, result) }

// PrintDoc prints {"ok":ok,...fields of result} as printOK does; with ok
// false the command then exits with status 1 (a report whose checks
// failed: nothing was in error).
func PrintDoc(cmd *cobra.Command, ok bool, result any) error {
	body, err := rpc.Marshal(result)
	if err != nil {
		return err
	}
	line := []byte(`{"ok":false`)
	if ok {
		line = []byte(`{"ok":true`)
	}
	if inner := bytes.TrimSpace(body); len(inner) > 2 && inner[0] == '{' {
		line = append(line, ',')
		line = append(line, inner[1:len(inner)-1]...)
	}
	line = append(line, '}')
	if err := writeJSONLine(cmd, line); err != nil || ok {
		return err
	}
	return ExitStatus{ExitError}
}

// PrintFailure prints {"ok":false,"error":{...}} and returns the exit
// status for the error's code; a usage error (usageError) is followed by
// the command's usage on stderr.
func PrintFailure(cmd *cobra.Command, err error) error {
	if ctx := cmd.Context(); ctx != nil && ctx.Err() != nil {
		// Interrupted (run's signal handling): nothing on stdout; run
		// turns this into 128+signal.
		return ExitStatus{ExitError}
	}
	re := asCLIError(err)
	if wantsText(cmd) {
		render.Failure(cmd.ErrOrStderr(), re, commandRef(cmd))
	} else {
		body, _ := rpc.Marshal(struct {
			OK    bool       `json:"ok"`
			Error *rpc.Error `json:"error"`
		}{false, re})
		writeJSONLine(cmd, body)
	}
	if isUsageError(err) {
		cmd.PrintErr(cmd.UsageString())
	}
	return ExitStatus{errorCode(err)}
}

// wantsText reports whether the command was given -o text: its failures
// are then printed as text on stderr (render.Failure) instead of the JSON
// line, with the same exit status.
func wantsText(cmd *cobra.Command) bool {
	f := cmd.Flags().Lookup("output")
	return f != nil && f.Value.String() == "text"
}

// commandRef is the SESSION argument of a command that takes one first
// ("read SESSION", "fetch (SESSION | --all)"), or "".
func commandRef(cmd *cobra.Command) string {
	if use := strings.Fields(cmd.Use); len(use) > 1 && strings.Contains(use[1], "SESSION") {
		return cmd.Flags().Arg(0)
	}
	return ""
}

func writeJSONLine(cmd *cobra.Command, line []byte) error {
	if pretty, _ := cmd.Flags().GetBool("pretty"); pretty {
		var buf bytes.Buffer
		if json.Indent(&buf, line, "", "  ") == nil {
			line = buf.Bytes()
		}
	}
	w := cmd.OutOrStdout()
	if _, err := w.Write(append(line, '\n')); err != nil {
		return err
	}
	return nil
}

// AddPretty registers --pretty on a control command.
func AddPretty(cmd *cobra.Command) {
	cmd.Flags().Bool("pretty", false, "indent the JSON output")
}
