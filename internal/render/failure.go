package render

import (
	"fmt"
	"io"

	"github.com/dlgt-dev/dlgt/rpc"
)

// Failure prints a failed command for a person (-o text): the code and
// message, the Session and field it concerns, and, for the codes that
// have one, what to do next. ref is the Session the command addressed
// ("" for none); the hint names the failure's own Session id first.
func Failure(w io.Writer, e *rpc.Error, ref string) {
	fmt.Fprintf(w, "dlgt: %s: %s\n", e.Code, OneLine(e.Message, 2000))
	if e.SessionID != "" {
		fmt.Fprintf(w, "session: %s\n", e.SessionID)
		ref = e.SessionID
	} else if e.LaunchID != "" {
		fmt.Fprintf(w, "launch: %s\n", e.LaunchID)
	}
	if e.Field != "" {
		fmt.Fprintf(w, "field: %s\n", e.Field)
	}
	if e.WorkableMaxBytes > 0 {
		fmt.Fprintf(w, "workable max_bytes: %d\n", e.WorkableMaxBytes)
	}
	if h := FailureHint(e.Code, ref); h != "" {
		fmt.Fprintf(w, "hint: %s\n", h)
	}
}

// FailureHint is what to do after a failure with code, for the Session
// ref ("" when the command addressed none): "" when the message says it
// already, or nothing general applies.
func FailureHint(code rpc.Code, ref string) string {
	s := "SESSION"
	if ref != "" {
		s = ShellWord(ref)
	}
	switch code {
	case rpc.CodeSessionBlocked:
		return BlockedHint(s)
	case rpc.CodeSessionBusy:
		return fmt.Sprintf("wait for its result (dlgt session fetch %s --until result --wait 10m), or interrupt it (dlgt session cancel %s)", s, s)
	case rpc.CodeSessionAttached:
		return "a person is attached to it: wait until they detach"
	case rpc.CodeCursorExpired, rpc.CodeCursorInvalid:
		return fmt.Sprintf("fetch without --cursor (dlgt session fetch %s): it returns the current state, the latest result and a fresh cursor", s)
	case rpc.CodeNotFound:
		return "dlgt session list --all -o text lists the Sessions this daemon knows"
	case rpc.CodeRPCUnavailable:
		return "dlgt doctor -o text says what is wrong"
	case rpc.CodeLaunchFailed:
		return "dlgt doctor -o text checks the harness installations and sign-ins"
	case rpc.CodeCancelTimeout:
		return fmt.Sprintf("the cancel goes on; see where it is with dlgt session read %s -o text", s)
	}
	return ""
}

// BlockedHint says how to answer a blocked Session, s as a shell word.
func BlockedHint(s string) string {
	return fmt.Sprintf("see what it asks with dlgt session read %s -o text; answer with dlgt session respond %s --allow (or --deny), or in its terminal with dlgt session attach %s", s, s, s)
}
