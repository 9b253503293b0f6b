package rpc

import (
	"errors"
	"fmt"
)

// Code is a stable v1 error code. Clients branch on the code, never on the
// message text.
type Code string

// The v1 error code families. Each code has exactly one retry and
// human-action policy; methods may add contextual fields to an Error but
// never overload a code with a different policy.
const (
	// CodeInvalidArgument is returned when a request cannot be retried unchanged.
	CodeInvalidArgument Code = "INVALID_ARGUMENT"
	// CodeNotFound is returned when a Session or configuration object does not exist.
	CodeNotFound Code = "NOT_FOUND"
	// CodeNoResult is returned when a Session has never accepted work.
	CodeNoResult Code = "NO_RESULT"
	// CodeAliasInUse is returned when an exact alias belongs to a non-terminal Session.
	CodeAliasInUse Code = "ALIAS_IN_USE"
	// CodeSessionBusy is returned while an execution is active; retry after it terminalizes.
	CodeSessionBusy Code = "SESSION_BUSY"
	// CodeSessionBlocked is returned when human input is required.
	CodeSessionBlocked Code = "SESSION_BLOCKED"
	// CodeSessionAttached is returned when an exclusive attach lease prevents a semantic send.
	CodeSessionAttached Code = "SESSION_ATTACHED"
	// CodeSessionUnavailable is returned when the Session state cannot accept the operation.
	CodeSessionUnavailable Code = "SESSION_UNAVAILABLE"
	// CodeAlreadyAttached is returned when another client owns the attach lease.
	CodeAlreadyAttached Code = "ALREADY_ATTACHED"
	// CodeCursorExpired is returned when a cursor position was never minted or is no longer held.
	CodeCursorExpired Code = "CURSOR_EXPIRED"
	// CodeCursorInvalid is returned when a cursor value is not a position number.
	CodeCursorInvalid Code = "CURSOR_INVALID"
	// CodeCancelTimeout is returned when a cancel wait expired; cancellation continues.
	CodeCancelTimeout Code = "CANCEL_TIMEOUT"
	// CodeLaunchFailed is returned when Harness startup or initial prompt acceptance failed.
	CodeLaunchFailed Code = "LAUNCH_FAILED"
	// CodeRPCUnavailable is returned when the daemon transport is unavailable; a retry may succeed.
	CodeRPCUnavailable Code = "RPC_UNAVAILABLE"
	// CodeInternal is returned on a dlgt runtime invariant failure.
	CodeInternal Code = "INTERNAL"
)

// Codes lists every v1 error code, in the order the contract documents them.
var Codes = []Code{
	CodeInvalidArgument, CodeNotFound, CodeNoResult, CodeAliasInUse,
	CodeSessionBusy, CodeSessionBlocked, CodeSessionAttached,
	CodeSessionUnavailable, CodeAlreadyAttached, CodeCursorExpired,
	CodeCursorInvalid, CodeCancelTimeout, CodeLaunchFailed,
	CodeRPCUnavailable, CodeInternal,
}

// Error is the wire error object. Code and Message are always present; the
// other fields are contextual and omitted when empty.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// SessionID names the canonical Session when a failure happened after
	// provider binding.
	SessionID string `json:"session_id,omitempty"`
	// LaunchID ("internal:<short-id>") names a launch that failed before the
	// provider id was known. It is never put in SessionID.
	LaunchID string `json:"launch_id,omitempty"`
	// Field names the offending parameter of an INVALID_ARGUMENT.
	Field string `json:"field,omitempty"`
	// WorkableMaxBytes is a max_bytes value verified to render a response,
	// set when max_bytes was too small.
	WorkableMaxBytes int `json:"workable_max_bytes,omitempty"`
	// DirtyFiles counts the uncommitted and untracked files of a worktree
	// a removal refused (session.stop remove_worktree without force).
	DirtyFiles int `json:"dirty_files,omitempty"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Is reports whether target is an *Error with the same code, so errors.Is
// keeps working after an error crossed the wire.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidField builds an INVALID_ARGUMENT naming the parameter at fault.
func InvalidField(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Field: field, Message: field + ": " + fmt.Sprintf(format, args...)}
}

// Sentinels for errors.Is comparisons by code.
var (
	ErrInvalidArgument    = &Error{Code: CodeInvalidArgument}
	ErrNotFound           = &Error{Code: CodeNotFound}
	ErrNoResult           = &Error{Code: CodeNoResult}
	ErrAliasInUse         = &Error{Code: CodeAliasInUse}
	ErrSessionBusy        = &Error{Code: CodeSessionBusy}
	ErrSessionBlocked     = &Error{Code: CodeSessionBlocked}
	ErrSessionAttached    = &Error{Code: CodeSessionAttached}
	ErrSessionUnavailable = &Error{Code: CodeSessionUnavailable}
	ErrAlreadyAttached    = &Error{Code: CodeAlreadyAttached}
	ErrCursorExpired      = &Error{Code: CodeCursorExpired}
	ErrCursorInvalid      = &Error{Code: CodeCursorInvalid}
	ErrCancelTimeout      = &Error{Code: CodeCancelTimeout}
	ErrLaunchFailed       = &Error{Code: CodeLaunchFailed}
	ErrRPCUnavailable     = &Error{Code: CodeRPCUnavailable}
	ErrInternal           = &Error{Code: CodeInternal}
)

// AsError maps any error to a wire error: an *Error passes through, anything
// else becomes INTERNAL. This is the one boundary where domain errors meet
// wire codes.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}
