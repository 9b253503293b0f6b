package main

import (
	"encoding/json"
	"io"

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
