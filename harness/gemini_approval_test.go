package harness

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

func readGeminiPermissionCases(t *testing.T) map[string]map[string]json.RawMessage {
	t.Helper()
	f, err := os.Open("testdata/gemini-permission.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases := map[string]map[string]json.RawMessage{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c map[string]json.RawMessage
		var name string
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil || json.Unmarshal(c["case"], &name) != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		cases[name] = c
	}
	return cases
}

// TestGeminiToolDenial builds the BeforeTool output the pinned Gemini CLI
// was seen to honour (no box, not run, the model got the reason), and
// refuses what it cannot carry.
func TestGeminiToolDenial(t *testing.T) {
	rec := readGeminiPermissionCases(t)["deny"]
	var modelGot string
	json.Unmarshal(rec["model_got"], &modelGot)
	got, err := GeminiToolDenial("DENIED-BY-LEADER")
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, got, rec["hook_output"]) || modelGot != "Tool execution blocked: DENIED-BY-LEADER" || string(rec["command_ran"]) != "false" {
		t.Errorf("built %s; recorded %s -> %q", got, rec["hook_output"], modelGot)
	}
	for name, reason := range map[string]string{"empty": " ", "invalid utf-8": "a\xffb", "too long": strings.Repeat("x", maxGeminiDenyReason+1)} {
		out, err := GeminiToolDenial(reason)
		var re *rpc.Error
		if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument || out != nil {
			t.Errorf("%s: %s, %v", name, out, err)
		}
	}
}

// TestGeminiApprovalKeys: "1" allows once (recorded), Esc refuses; and
// BeforeTool's allow was recorded as not skipping the box, which is why an
// allow is a key.
func TestGeminiApprovalKeys(t *testing.T) {
	cases := readGeminiPermissionCases(t)
	var keys map[string]string
	json.Unmarshal(cases["box-keys"]["keys"], &keys)
	if k := GeminiApprovalKeys(true); len(k) != 1 || string(k[0].Data) != "1" || !strings.HasPrefix(keys["1"], "Allow once") {
		t.Errorf("allow keys %v; recorded 1: %q", k, keys["1"])
	}
	if k := GeminiApprovalKeys(false); len(k) != 1 || string(k[0].Data) != "\x1b" || !strings.Contains(keys["Esc"], "cancelled") {
		t.Errorf("deny keys %v; recorded Esc: %q", k, keys["Esc"])
	}
	if string(cases["allow-from-hook"]["then_box"]) != "true" {
		t.Error("the recorded BeforeTool allow should have shown the box")
	}
	ev, err := Gemini{}.ParseHook("Notification", cases["allow-from-hook"]["notification"])
	if err != nil || ev.Kind != KindBlocked || !ev.Answerable || ev.Tool != "run_shell_command" || ev.Input != "touch gmarker" {
		t.Errorf("the recorded ToolPermission notification: %+v %v", ev, err)
	}
}

// Gemini is answered with its box's keys (a KeyAnswerer): each waits for
// the box's first option on the screen; a deny ends the turn and takes no
// message (refused with INVALID_ARGUMENT). An MCP box's request names the
// server's tool and carries the details as its input.
func TestGeminiAnswerKeys(t *testing.T) {
	var ka KeyAnswerer = Gemini{}
	for decision, want := range map[string]string{rpc.DecisionAllow: "1", rpc.DecisionDeny: "\x1b"} {
		k, err := ka.AnswerKeys(decision, "")
		if err != nil || len(k) != 1 || string(k[0].Data) != want || k[0].Await == nil || !slices.Contains(k[0].Await.Shown, "Allow once") || k[0].Await.Timeout <= 0 {
			t.Errorf("%s: %+v %v", decision, k, err)
		}
	}
	if _, err := ka.AnswerKeys(rpc.DecisionDeny, "not here"); !errors.Is(err, rpc.ErrInvalidArgument) {
		t.Errorf("deny with a message: %v", err)
	}
	if !ka.DenyEndsTurn() {
		t.Error("Gemini's deny ends the turn")
	}
	ev, err := Gemini{}.ParseHook("Notification", []byte(`{"session_id":"s","hook_event_name":"Notification","notification_type":"ToolPermission",`+
		`"message":"m","details":{"type":"mcp","serverName":"probe","toolName":"hello","toolDisplayName":"hello\u0007"}}`))
	if err != nil || !ev.Answerable || ev.Tool != "mcp_probe_hello" || ev.Input != `{"type":"mcp","serverName":"probe","toolName":"hello","toolDisplayName":"hello\u0007"}` {
		t.Errorf("mcp box: %+v %v", ev, err)
	}
}
