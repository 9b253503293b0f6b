package harness

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/hookfwd"
	"github.com/dlgt-dev/dlgt/rpc"
)

// codexPermissionCase is one line of testdata/codex-permission.jsonl: what
// the pinned Codex did with a PermissionRequest hook's answer.
type codexPermissionCase struct {
	Case              string          `json:"case"`
	HookOutput        json.RawMessage `json:"hook_output"`
	PermissionRequest json.RawMessage `json:"permission_request"`
	CommandRan        *bool           `json:"command_ran"`
	ModelGot          string          `json:"model_got"`
	OverlayKeys       map[string]string
}

func readCodexPermissionCases(t *testing.T) map[string]codexPermissionCase {
	t.Helper()
	f, err := os.Open("testdata/codex-permission.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases := map[string]codexPermissionCase{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c codexPermissionCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		var keys struct {
			OverlayKeys map[string]string `json:"overlay_keys"`
		}
		_ = json.Unmarshal(sc.Bytes(), &keys)
		c.OverlayKeys = keys.OverlayKeys
		cases[c.Case] = c
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// TestCodexPermissionDecision builds exactly the hook outputs the pinned
// Codex was seen to honour (allow ran the command; deny did not, and the
// model got the message).
func TestCodexPermissionDecision(t *testing.T) {
	cases := readCodexPermissionCases(t)
	for _, tc := range []struct {
		name    string
		allow   bool
		message string
	}{
		{"allow", true, ""},
		{"deny", false, "DENIED-BY-LEADER: not now"},
		{"deny-no-message", false, ""},
	} {
		rec, ok := cases[tc.name]
		if !ok || len(rec.HookOutput) == 0 || rec.CommandRan == nil {
			t.Fatalf("no recorded case %q", tc.name)
		}
		if *rec.CommandRan != tc.allow {
			t.Fatalf("%s: recorded command_ran %v", tc.name, *rec.CommandRan)
		}
		if !tc.allow && tc.message != "" && !strings.Contains(rec.ModelGot, tc.message) {
			t.Fatalf("%s: the model did not get the message: %q", tc.name, rec.ModelGot)
		}
		got, err := CodexPermissionDecision(tc.allow, tc.message)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !jsonEqual(t, got, rec.HookOutput) {
			t.Errorf("%s: built %s, Codex honoured %s", tc.name, got, rec.HookOutput)
		}
	}
}

func TestCodexPermissionDecisionRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		allow bool
		msg   string
	}{
		"message with allow": {true, "why"},
		"invalid utf-8":      {false, "a\xffb"},
		"too long":           {false, strings.Repeat("x", maxCodexDenyMessage+1)},
	} {
		out, err := CodexPermissionDecision(tc.allow, tc.msg)
		var re *rpc.Error
		if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument || out != nil {
			t.Errorf("%s: got %s, %v; want an invalid_argument error", name, out, err)
		}
	}
	if _, err := CodexPermissionDecision(false, strings.Repeat("é", maxCodexDenyMessage/2)); err != nil {
		t.Errorf("a message at the bound: %v", err)
	}
}

// TestCodexPermissionRequestRecorded: the recorded PermissionRequest
// payloads are blocked evidence naming the tool and its command.
func TestCodexPermissionRequestRecorded(t *testing.T) {
	cases := readCodexPermissionCases(t)
	for _, name := range []string{"allow", "deny"} {
		ev, err := Codex{}.ParseHook("PermissionRequest", cases[name].PermissionRequest)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != KindBlocked || ev.Reason != "permission" || ev.Tool != "Bash" || ev.Command != "touch escmarker" || ev.TurnID == "" {
			t.Errorf("%s: %+v", name, ev)
		}
	}
}

// TestCodexApprovalKeys: the overlay keys are the ones recorded to answer
// it (y approves once; Esc refuses and aborts the turn).
func TestCodexApprovalKeys(t *testing.T) {
	keys := readCodexPermissionCases(t)["no-output"].OverlayKeys
	allow, deny := CodexApprovalKeys(true), CodexApprovalKeys(false)
	if len(allow) != 1 || string(allow[0].Data) != "y" || !strings.HasPrefix(keys["y"], "approve once") {
		t.Errorf("allow keys %v; recorded y: %q", allow, keys["y"])
	}
	if len(deny) != 1 || string(deny[0].Data) != "\x1b" || !strings.Contains(keys["Esc"], "turn aborted") {
		t.Errorf("deny keys %v; recorded Esc: %q", deny, keys["Esc"])
	}
	if string(deny[0].Data) != string(Codex{}.Interrupt()[0].Data) {
		t.Error("refusing at the overlay is Codex's interrupt key")
	}
}

// TestCodexDecider: Codex takes session.respond's answers through its
// PermissionRequest hook: the evidence is answerable with the command as
// its input, and DecisionOutput prints the outputs the pinned Codex was
// seen to honour.
func TestCodexDecider(t *testing.T) {
	cases := readCodexPermissionCases(t)
	var h Harness = Codex{}
	d, ok := h.(Decider)
	if !ok {
		t.Fatal("Codex is not a Decider")
	}
	if a, ok := h.(DialogAfterHook); !ok || !a.DialogAfterHook() {
		t.Fatal("Codex does not report that its overlay waits for the hook")
	}
	// The forwarder stops waiting before Codex would kill its hook.
	if time.Duration(CodexPermissionTimeout)*time.Second <= hookfwd.DecisionWait {
		t.Fatalf("hook timeout %d s is not above the forwarder's wait %v", CodexPermissionTimeout, hookfwd.DecisionWait)
	}
	ev, err := Codex{}.ParseHook("PermissionRequest", cases["allow"].PermissionRequest)
	if err != nil || !ev.Answerable || ev.Input != "touch escmarker" {
		t.Fatalf("PermissionRequest evidence = %+v, %v", ev, err)
	}
	for _, tc := range []struct{ rec, decision, message string }{
		{"allow", "allow", ""},
		{"deny", "deny", "DENIED-BY-LEADER: not now"},
		{"deny-no-message", "deny", ""},
	} {
		out, ok := d.DecisionOutput("PermissionRequest", tc.decision, tc.message)
		if !ok || !jsonEqual(t, out, cases[tc.rec].HookOutput) {
			t.Errorf("%s: %s %v, Codex honoured %s", tc.rec, out, ok, cases[tc.rec].HookOutput)
		}
	}
	for _, bad := range [][3]string{
		{"Stop", "allow", ""},
		{"PreToolUse", "deny", ""},
		{"PermissionRequest", "maybe", ""},
		{"PermissionRequest", "allow", "a message with allow"},
		{"PermissionRequest", "deny", strings.Repeat("x", maxCodexDenyMessage+1)},
	} {
		if out, ok := d.DecisionOutput(bad[0], bad[1], bad[2]); ok || out != nil {
			t.Errorf("%q: %s", bad, out)
		}
	}
	// Only PermissionRequest's events are answerable.
	for _, other := range []string{"PreToolUse", "Stop"} {
		payload := []byte(`{"session_id":"s","hook_event_name":"` + other + `","tool_name":"Bash","tool_input":{"command":"ls"}}`)
		if ev, err := (Codex{}).ParseHook(other, payload); err != nil || ev.Answerable {
			t.Errorf("%s: %+v %v", other, ev, err)
		}
	}
}
