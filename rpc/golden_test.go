package rpc

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const goldenDir = "testdata/golden"

// Realistic identifiers from the contract.
const (
	codexID  = "codex:019f6307-341e-7e81-8a33-7ab61e804345"
	claudeID = "claude:8bc7859c-4f1e-4a7b-9d55-0c1e6f2a9b31"
)

func ptr[T any](v T) *T { return &v }

// goldenCase is one public method's example request and response.
type goldenCase struct {
	id     string // raw JSON id
	params any    // a pointer to the method's params struct
	result any
}

func exampleSession(id, state string) Session {
	s := Session{
		ID: id, Title: "Review the RPC layer", Harness: "codex", Cwd: "/home/dev/src/dlgt",
		Model: "gpt-5-codex", Effort: "high", State: state,
		CreatedAtMS: 1784024104395, UpdatedAtMS: 1784024252019,
	}
	if strings.HasPrefix(id, "claude:") {
		s.Harness, s.Model, s.Alias = "claude", "opus", "review"
	}
	if state == StateBusy {
		s.BusyForMS, s.PTYQuietForMS = ptr[int64](183000), ptr[int64](72000)
	}
	return s
}

func exampleResult() *Result {
	return &Result{
		ExecutionSeq: 2, Status: StatusCompleted, FinalText: ptr("Review result..."),
		FinalTextSource: TextSourceHook, StartedAtMS: 1784024104395, CompletedAtMS: 1784024252019,
		Usage: json.RawMessage("null"),
	}
}

// goldenCases maps every public method to its example. A method missing
// here fails TestGoldenCoverage.
func goldenCases() map[string]goldenCase {
	return map[string]goldenCase{
		MethodSessionCreate: {
			id: `"req_1"`,
			params: &SessionCreateParams{
				Title: "Review the RPC layer", Alias: "review", Harness: "claude",
				Cwd: "/home/dev/src/dlgt", Model: "opus", Effort: "high",
				HarnessOptions: []string{"max-turns=3"}, AutoApprove: ptr(true),
				Prompt:    "Review rpc/ for protocol bugs. Report <file>:<line> & a fix.\n",
				RequestID: "9d0c6a52-create-review", StartupTimeoutMS: 60000,
				Environment: map[string]string{"DLGT_TRACE": "1"}, Rows: 40, Cols: 120,
			},
			result: Receipt{Session: exampleSession(claudeID, StateBusy), ExecutionSeq: 1, Cursor: "1", Submission: SubmissionConfirmed},
		},
		MethodSessionRestart: {
			id:     `"req_2"`,
			params: &SessionRestartParams{Session: codexID, StartupTimeoutMS: 60000, Environment: map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, Rows: 24, Cols: 120},
			result: SessionResult{Session: exampleSession(codexID, StateStarting), Cursor: "12"},
		},
		MethodSessionSend: {
			id:     `3`,
			params: &SessionSendParams{Session: codexID, Prompt: "Now fix the failing test.", RequestID: "9d0c6a52-send-2"},
			result: Receipt{
				Session: exampleSession(codexID, StateBusy), ExecutionSeq: 2, Cursor: "13",
				Submission: SubmissionPending,
				Hint:       "the prompt was delivered but the provider has not acknowledged it yet; fetch until result, or repeat this request_id",
				Action: &Action{Method: MethodSessionFetch, Params: map[string]any{
					"session": codexID, "cursor": "13", "until": "result", "wait_ms": 60000,
				}},
			},
		},
		MethodSessionFetch: {
			id:     `"req_1"`,
			params: &SessionFetchParams{Session: codexID, Cursor: json.RawMessage(`"3"`), Until: "result", WaitMS: 900000},
			result: FetchDocument{
				SchemaVersion: SchemaVersion, Runtime: Runtime{Version: "0.4.0", InstanceID: "1f2c9a7e5b3d4c10"},
				Reason: ReasonResult, Gaps: []Gap{}, Cursor: "4",
				Sessions: []FetchSession{{
					Session: Session{ID: "claude:8bc7859c", Title: "Review", Harness: "claude", Cwd: "/home/dev/src/dlgt", State: StateIdle, CreatedAtMS: 1784024100000, UpdatedAtMS: 1784024252019},
					Events:  []Event{{SchemaVersion: 1, Seq: 104, Type: EventSessionIdle, SessionID: "claude:8bc7859c", ExecutionSeq: 7, ResultStatus: StatusCompleted}},
					Results: []Result{{
						ExecutionSeq: 7, Status: StatusCompleted, FinalText: ptr("Review result..."), FinalTextSource: TextSourceHook,
						FinalTextOffset: ptr(0), FinalTextComplete: ptr(true), StartedAtMS: 1784024104395, CompletedAtMS: 1784024252019,
						Usage: json.RawMessage("null"),
					}},
					Screen: &Screen{Epoch: 3, Stable: []string{"Checking tests..."}, Live: []string{"Writing final review..."}},
					Gaps:   []Gap{},
				}},
			},
		},
		MethodSessionCancel: {
			id:     `"req_5"`,
			params: &SessionCancelParams{Session: codexID, TimeoutMS: ptr[int64](30000)},
			result: SessionResult{Session: exampleSession(codexID, StateIdle), Cursor: "15", Result: &Result{
				ExecutionSeq: 2, Status: StatusCanceled, FinalText: ptr("Partial review"), FinalTextSource: TextSourceHook,
				Error: &ResultError{Code: "canceled", Message: "canceled by session.cancel"}, StartedAtMS: 1784024104395, CompletedAtMS: 1784024110000,
				Usage: json.RawMessage("null"),
			}},
		},
		MethodSessionRespond: {
			id: `"req_16"`,
			params: &SessionRespondParams{Session: "review", PendingID: "prq_3f9c2a7d41b0e8c6a5", Decision: DecisionDeny,
				Message: "Not on main: make a branch first.", RequestID: "respond-review-1"},
			result: SessionRespondResult{Session: exampleSession(claudeID, StateBlocked), PendingID: "prq_3f9c2a7d41b0e8c6a5", Decision: DecisionDeny},
		},
		MethodSessionList: {
			id:     `"req_6"`,
			params: &SessionListParams{All: true},
			result: SessionListResult{Sessions: []Session{exampleSession(claudeID, StateIdle), exampleSession(codexID, StateStopped)}},
		},
		MethodSessionRead: {
			id:     `"req_7"`,
			params: &SessionReadParams{Session: "review"},
			result: SessionReadResult{Session: exampleSession(claudeID, StateIdle), Result: exampleResult()},
		},
		MethodSessionStop: {
			id:     `"req_8"`,
			params: &SessionStopParams{Session: codexID, Force: true},
			result: SessionResult{Session: exampleSession(codexID, StateStopped)},
		},
		MethodEventRead: {
			id:     `"req_9"`,
			params: &EventReadParams{Session: codexID, After: ptr[uint64](100)},
			result: []Event{
				{SchemaVersion: 1, Seq: 101, Type: EventSessionCreated, SessionID: codexID},
				{SchemaVersion: 1, Seq: 103, Type: EventSessionBusy, SessionID: codexID, ExecutionSeq: 1},
				{SchemaVersion: 1, Seq: 104, Type: EventProviderRetrying, SessionID: codexID, ExecutionSeq: 1, Attempt: 1},
				{SchemaVersion: 1, Seq: 105, Type: EventSessionBlocked, SessionID: codexID, ExecutionSeq: 1, Reason: "user_input"},
				{SchemaVersion: 1, Seq: 107, Type: EventSessionIdle, SessionID: codexID, ExecutionSeq: 1, ResultStatus: StatusCompleted},
			},
		},
		MethodEventSubscribe: {
			id:     `"sub_1"`,
			params: &EventReadParams{After: ptr[uint64](100)},
			result: SubscribeAck{Subscribed: true, After: 100},
		},
		MethodScrollbackRead: {
			id:     `"req_11"`,
			params: &ScrollbackReadParams{Session: codexID, Lines: 100, Before: "scr_84A2"},
			result: ScrollbackPage{SessionID: codexID, Screen: ScreenSize{Rows: 24, Cols: 120}, Lines: []string{"Review complete.", "", "Main concerns:"}, Truncated: true, Before: "scr_84A2"},
		},
		MethodTranscriptReadRaw: {
			id:     `"req_12"`,
			params: &TranscriptReadRawParams{Session: codexID, After: 4096, LimitBytes: 4096},
			result: RawPage{SessionID: codexID, DataBase64: "G1sxbVJldmlldyBjb21wbGV0ZS4bWzBtDQo=", ByteLen: 26, Start: 4096, NextAfter: 4122, HasMore: false},
		},
		MethodModelList: {
			id:     `"req_13"`,
			params: &ModelListParams{Harness: "claude", IncludeHidden: true},
			result: ModelListResult{Harness: "claude", Source: "harness", Models: []Model{
				{ID: "claude-opus-4-1", DisplayName: "Opus", Aliases: []string{"opus"}, Default: true},
				{ID: "claude-sonnet-4-5", DisplayName: "Sonnet", Aliases: []string{"sonnet"}},
				{ID: "claude-3-5-haiku", DisplayName: "Haiku", Hidden: true},
			}},
		},
		MethodProfileList: {
			id:     `"req_14"`,
			params: &ProfileListParams{},
			result: ProfileListResult{Profiles: []Profile{
				{Name: "review", Harness: "claude", Model: "opus", Effort: "high", HarnessOptions: []string{"max-turns=3"}, EnvironmentKeys: []string{"MY_VAR"}},
			}},
		},
		MethodHarnessList: {
			id:     `"req_15"`,
			params: &HarnessListParams{Harness: "claude"},
			result: HarnessListResult{Harnesses: []HarnessInfo{{
				Name: "claude", Binary: "/usr/local/bin/claude", Available: true, Version: "2.1.332", TestedVersion: "2.1.332",
				LifecycleSource: "hooks",
				Capabilities:    HarnessCapabilities{Resume: true, Cancel: true, HarnessOptions: true, AutoApprove: true, EffortLevels: []string{"low", "medium", "high"}, Blocking: true},
			}}},
		},
		MethodSessionDiff: {
			id:     `"req_16"`,
			params: &SessionDiffParams{Session: "review", MaxBytes: 65536},
			result: SessionDiffResult{
				Session:  exampleSession(codexID, StateIdle),
				Worktree: Worktree{Path: "/home/dev/.local/state/dlgt/worktrees/dlgt-1a2b3c4d/dlgt-review", Branch: "dlgt/review", BaseCommit: "4dea75e0c1b2a3f4e5d6c7b8a9f0e1d2c3b4a5f6", Repo: "/home/dev/src/dlgt"},
				Summary:  DiffSummary{Files: 1, Insertions: 1},
				Diff:     "diff --git a/NOTES b/NOTES\nnew file mode 100644\nindex 0000000..3b18e51\n--- /dev/null\n+++ b/NOTES\n@@ -0,0 +1 @@\n+hello world\n",
			},
		},
		MethodSessionWarm: {
			id: `"req_17"`,
			params: &SessionWarmParams{
				Harness: "codex", Cwd: "/home/dev/src/dlgt", Model: "gpt-5-codex",
				Environment: map[string]string{"HOME": "/home/dev", "PATH": "/usr/local/bin:/usr/bin:/bin"}, Spares: 1,
			},
			result: SessionWarmResult{Shape: "5f0c2a9e41b7d3c8a1e6f4b2", Spares: 1, Ready: 1, RSSBytes: 97517568, Pids: []int{48213}, IdleMS: 600000},
		},
	}
}

// goldenErrors maps every error code to an example error response.
func goldenErrors() map[Code]*Error {
	return map[Code]*Error{
		CodeInvalidArgument:    {Code: CodeInvalidArgument, Field: "request_id", Message: "request_id: required field is missing"},
		CodeNotFound:           {Code: CodeNotFound, Message: "no Session matches \"review\""},
		CodeNoResult:           {Code: CodeNoResult, SessionID: codexID, Message: "Session has never accepted work"},
		CodeAliasInUse:         {Code: CodeAliasInUse, SessionID: claudeID, Message: "alias \"review\" belongs to a non-terminal Session"},
		CodeSessionBusy:        {Code: CodeSessionBusy, SessionID: codexID, Message: "execution 2 is active; retry after it terminalizes"},
		CodeSessionBlocked:     {Code: CodeSessionBlocked, SessionID: codexID, Message: "the Session is waiting for human input"},
		CodeSessionAttached:    {Code: CodeSessionAttached, SessionID: codexID, Message: "an attach lease prevents semantic send"},
		CodeSessionUnavailable: {Code: CodeSessionUnavailable, SessionID: codexID, Message: "a stopped Session cannot accept session.send"},
		CodeAlreadyAttached:    {Code: CodeAlreadyAttached, SessionID: codexID, Message: "another client owns the attach lease"},
		CodeCursorExpired:      {Code: CodeCursorExpired, Message: "this daemon no longer holds position 3"},
		CodeCursorInvalid:      {Code: CodeCursorInvalid, Message: "cursor \"abc\" is not a position number"},
		CodeCancelTimeout:      {Code: CodeCancelTimeout, SessionID: codexID, Message: "cancel wait expired after 30000 ms; cancellation continues"},
		CodeLaunchFailed:       {Code: CodeLaunchFailed, LaunchID: "internal:7c1e2a", Message: "claude exited before binding: exit status 1"},
		CodeRPCUnavailable:     {Code: CodeRPCUnavailable, Message: "daemon socket /run/user/1000/dlgt.sock: connection refused"},
		CodeInternal:           {Code: CodeInternal, Message: "internal error serving session.fetch"},
	}
}

// paramsTypeOf returns a fresh pointer to the params struct of method,
// which must be the same type its golden case uses.
func newParams(method string) any {
	switch method {
	case MethodSessionCreate:
		return &SessionCreateParams{}
	case MethodSessionRestart:
		return &SessionRestartParams{}
	case MethodSessionSend:
		return &SessionSendParams{}
	case MethodSessionFetch:
		return &SessionFetchParams{}
	case MethodSessionCancel:
		return &SessionCancelParams{}
	case MethodSessionList:
		return &SessionListParams{}
	case MethodSessionRead:
		return &SessionReadParams{}
	case MethodSessionStop:
		return &SessionStopParams{}
	case MethodEventRead, MethodEventSubscribe:
		return &EventReadParams{}
	case MethodScrollbackRead:
		return &ScrollbackReadParams{}
	case MethodTranscriptReadRaw:
		return &TranscriptReadRawParams{}
	case MethodModelList:
		return &ModelListParams{}
	case MethodProfileList:
		return &ProfileListParams{}
	case MethodHarnessList:
		return &HarnessListParams{}
	case MethodSessionRespond:
		return &SessionRespondParams{}
	case MethodSessionDiff:
		return &SessionDiffParams{}
	case MethodSessionWarm:
		return &SessionWarmParams{}
	}
	return nil
}

func goldenRequest(t testing.TB, method string, gc goldenCase) []byte {
	t.Helper()
	p, err := Marshal(gc.params)
	if err != nil {
		t.Fatalf("%s params: %v", method, err)
	}
	line, err := Marshal(Request{ID: json.RawMessage(gc.id), Method: method, Params: p})
	if err != nil {
		t.Fatalf("%s request: %v", method, err)
	}
	return append(line, '\n')
}

// checkGolden compares got with the file at path byte for byte, or rewrites
// the file under -update.
func checkGolden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file missing (run go test ./rpc/ -run Golden -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs (run with -update if the change is intended):\n%s", path, lineDiff(want, got))
	}
}

// lineDiff renders a minimal diff of two byte strings: the first differing
// offset and both lines.
func lineDiff(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	return fmt.Sprintf("first difference at byte %d\n- want: %q\n+ got:  %q", i, want, got)
}

func TestGoldenCoverage(t *testing.T) {
	cases := goldenCases()
	for _, m := range PublicMethods {
		gc, ok := cases[m]
		if !ok {
			t.Errorf("public method %s has no golden case", m)
			continue
		}
		if reflect.TypeOf(gc.params) != reflect.TypeOf(newParams(m)) {
			t.Errorf("%s: golden params are %T, want %T", m, gc.params, newParams(m))
		}
		if *update {
			continue
		}
		for _, kind := range []string{"request", "response"} {
			path := filepath.Join(goldenDir, m+"."+kind+".jsonl")
			if _, err := os.Stat(path); err != nil {
				t.Errorf("public method %s has no %s golden file: %v", m, kind, err)
			}
		}
	}
	if len(cases) != len(PublicMethods) {
		t.Errorf("%d golden cases for %d public methods", len(cases), len(PublicMethods))
	}
	errs := goldenErrors()
	for _, c := range Codes {
		if _, ok := errs[c]; !ok {
			t.Errorf("error code %s has no golden case", c)
		}
		if *update {
			continue
		}
		if _, err := os.Stat(filepath.Join(goldenDir, "errors", string(c)+".jsonl")); err != nil {
			t.Errorf("error code %s has no golden file: %v", c, err)
		}
	}
	if len(errs) != len(Codes) {
		t.Errorf("%d golden errors for %d codes", len(errs), len(Codes))
	}
	// No stray files for methods or codes that no longer exist.
	entries, _ := os.ReadDir(goldenDir)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m, _, _ := strings.Cut(strings.TrimSuffix(e.Name(), ".jsonl"), ".request")
		m, _, _ = strings.Cut(m, ".response")
		if !IsPublic(m) {
			t.Errorf("stray golden file %s", e.Name())
		}
	}
}

func TestGoldenMethods(t *testing.T) {
	for _, m := range PublicMethods {
		gc, ok := goldenCases()[m]
		if !ok {
			continue // reported by TestGoldenCoverage
		}
		t.Run(m, func(t *testing.T) {
			req := goldenRequest(t, m, gc)
			resp := MarshalResponse(json.RawMessage(gc.id), gc.result, nil)
			checkGolden(t, filepath.Join(goldenDir, m+".request.jsonl"), req)
			checkGolden(t, filepath.Join(goldenDir, m+".response.jsonl"), resp)
			if bytes.Count(req, []byte("\n")) != 1 || bytes.Count(resp, []byte("\n")) != 1 {
				t.Fatalf("golden lines must be one line each")
			}

			// The request decodes strictly into the method's params and
			// yields the example back.
			parsed, _, perr := ParseRequest(bytes.TrimSuffix(req, []byte("\n")))
			if perr != nil {
				t.Fatalf("ParseRequest: %v", perr)
			}
			if parsed.Method != m || string(parsed.ID) != gc.id {
				t.Fatalf("parsed method %q id %s", parsed.Method, parsed.ID)
			}
			p := newParams(m)
			if derr := Decode(parsed.Params, p); derr != nil {
				t.Fatalf("Decode: %v", derr)
			}
			if !reflect.DeepEqual(p, gc.params) {
				t.Fatalf("decoded params %+v, want %+v", p, gc.params)
			}

			// The response is a bare envelope: id and result, never ok.
			var env map[string]json.RawMessage
			if err := json.Unmarshal(resp, &env); err != nil {
				t.Fatalf("response: %v", err)
			}
			if len(env) != 2 || env["id"] == nil || env["result"] == nil {
				t.Fatalf("response members %v, want exactly id and result", keys(env))
			}
			// Re-encoding the decoded result through its type is stable.
			out := reflect.New(reflect.TypeOf(gc.result))
			if err := DecodeResponse(resp, out.Interface()); err != nil {
				t.Fatalf("DecodeResponse: %v", err)
			}
			if again := MarshalResponse(json.RawMessage(gc.id), out.Elem().Interface(), nil); !bytes.Equal(again, resp) {
				t.Fatalf("result does not round-trip:\n%s", lineDiff(resp, again))
			}
		})
	}
}

func TestGoldenErrors(t *testing.T) {
	errs := goldenErrors()
	for _, c := range Codes {
		e, ok := errs[c]
		if !ok {
			continue // reported by TestGoldenCoverage
		}
		t.Run(string(c), func(t *testing.T) {
			if e.Code != c {
				t.Fatalf("example for %s has code %s", c, e.Code)
			}
			line := MarshalResponse(json.RawMessage(`"req_1"`), nil, e)
			checkGolden(t, filepath.Join(goldenDir, "errors", string(c)+".jsonl"), line)
			var env map[string]json.RawMessage
			if err := json.Unmarshal(line, &env); err != nil {
				t.Fatal(err)
			}
			if len(env) != 2 || env["id"] == nil || env["error"] == nil {
				t.Fatalf("error response members %v, want exactly id and error", keys(env))
			}
			err := DecodeResponse(line, nil)
			var got *Error
			if !asError(err, &got) || !reflect.DeepEqual(got, e) {
				t.Fatalf("DecodeResponse = %#v, want %#v", err, e)
			}
		})
	}
}

func asError(err error, target **Error) bool {
	e, ok := err.(*Error)
	if ok {
		*target = e
	}
	return ok
}

func keys(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
