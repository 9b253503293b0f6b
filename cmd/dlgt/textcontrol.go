package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/dlgt-dev/dlgt/rpc"
)

// -o text for the commands that change a Session: create and send print
// their receipt and the command that waits for the result; restart, stop
// and cancel print the Session's state and what became of its work.

// writeReceiptText prints a session.create or session.send receipt for a
// person.
func writeReceiptText(w io.Writer, r rpc.Receipt) error {
	name := sessionName(r.Session)
	fmt.Fprintf(w, "%s  %s  %s  execution #%d\n", name, r.Session.State, r.Session.Harness, r.ExecutionSeq)
	prompt := r.Submission
	switch r.Submission {
	case rpc.SubmissionConfirmed:
		prompt = "confirmed: the harness took it"
	case rpc.SubmissionPending:
		prompt = "pending: delivered, not acknowledged by the harness yet; repeat this command (same --request-id) to refresh it, never a new id"
	}
	if r.Replayed {
		prompt += " (a replay: this request id was accepted before)"
	}
	fmt.Fprintf(w, "prompt  %s\n", prompt)
	fmt.Fprintf(w, "next    dlgt session fetch %s --cursor %s --until result --wait 10m\n", shellWord(name), r.Cursor)
	return nil
}

// writeSessionResultText prints a session.restart, session.stop or
// session.cancel answer for a person.
func writeSessionResultText(w io.Writer, r rpc.SessionResult) error {
	fmt.Fprintf(w, "%s  %s  %s\n", sessionName(r.Session), r.Session.State, r.Session.Harness)
	if res := r.Result; res != nil {
		fmt.Fprintf(w, "result  #%d %s", res.ExecutionSeq, res.Status)
		if res.Error != nil {
			fmt.Fprintf(w, ": %s", oneLine(res.Error.Message, 200))
		}
		fmt.Fprintln(w)
	}
	if r.Cursor != "" {
		fmt.Fprintf(w, "cursor  %s\n", r.Cursor)
	}
	return nil
}

// writeCancelText prints a session.cancel answer for a person. The daemon
// answers a cancel with nothing to interrupt (an idle, stopped or failed
// Session) with the Session alone, no result: that is said, not left to
// read as a cancellation.
func writeCancelText(w io.Writer, r rpc.SessionResult) error {
	if err := writeSessionResultText(w, r); err != nil {
		return err
	}
	if r.Result == nil {
		fmt.Fprintf(w, "result  none: nothing to cancel, no execution was active (the Session is %s)\n", r.Session.State)
	}
	return nil
}

// shellWord is s as one word of a shell command line: as it is when it
// needs no quoting (aliases, provider ids), else single-quoted.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
