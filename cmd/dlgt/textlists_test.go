package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

// -o text on harnesses, models, profiles and scrollback: the answer laid
// out for a person, the JSON line still the default, failures still JSON.
func TestListingsText(t *testing.T) {
	d := testkit.NewFakeDaemon(t)
	d.Set(rpc.MethodHarnessList, rpc.HarnessListResult{Harnesses: []rpc.HarnessInfo{
		{Name: "claude", Binary: "/opt/claude", Available: true, Version: "2.1.332", TestedVersion: "2.1.332", LifecycleSource: "hooks", ScreenMode: rpc.ScreenInline},
		{Name: "codex", Binary: "codex", TestedVersion: "0.171.0", LifecycleSource: "hooks", ScreenMode: rpc.ScreenInline},
	}})
	d.Set(rpc.MethodModelList, rpc.ModelListResult{Harness: "codex", Source: "built-in", Models: []rpc.Model{
		{ID: "gpt-x", DisplayName: "GPT X", Default: true, Aliases: []string{"x", "ex"}},
	}})
	d.Set(rpc.MethodScrollbackRead, rpc.ScrollbackPage{SessionID: "claude:1", Lines: []string{"first ●", "", "third ❯"}, Before: "scr_1.7"})

	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"harnesses", "-o", "text"}, []string{
			"HARNESS  AVAILABLE  VERSION  TESTED   SCREEN  LIFECYCLE  BINARY\n",
			"claude   yes        2.1.332  2.1.332  inline  hooks      /opt/claude\n",
			"codex    no         -        0.171.0  inline  hooks      codex\n"}},
		{[]string{"models", "--harness", "codex", "-o", "text"}, []string{
			"codex models (from built-in)\n", "gpt-x  GPT X  yes      no      x, ex\n"}},
		{[]string{"scrollback", "rev", "-o", "text"}, []string{"first ●\n\nthird ❯\n"}},
	}
	for _, c := range cases {
		e, out, errb := cliEnv(t, d, nil, nil, "")
		code, stdout := runCLI(t, e, out, c.args...)
		if code != cli.ExitOK || strings.Contains(stdout, `"ok"`) {
			t.Fatalf("%v: exit %d\n%s", c.args, code, stdout)
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Fatalf("%v: text lacks %q:\n%s", c.args, w, stdout)
			}
		}
		if c.args[0] == "scrollback" {
			// stdout is only the rows, so it pipes; the next page is named on stderr.
			if stdout != "first ●\n\nthird ❯\n" || !strings.Contains(errb.String(), "--before scr_1.7") {
				t.Fatalf("scrollback stdout %q stderr %q", stdout, errb.String())
			}
		}
		// Without -o the same call prints the JSON line.
		e, out, _ = cliEnv(t, d, nil, nil, "")
		_, stdout = runCLI(t, e, out, c.args[:len(c.args)-2]...)
		if doc := oneJSONLine(t, stdout); doc["ok"] != true {
			t.Fatalf("%v without -o: %s", c.args, stdout)
		}
		e, out, _ = cliEnv(t, d, nil, nil, "")
		bad := append(append([]string{}, c.args[:len(c.args)-1]...), "yaml")
		if code, stdout := runCLI(t, e, out, bad...); code != cli.ExitError || !strings.Contains(stdout, "INVALID_ARGUMENT") {
			t.Fatalf("%v: exit %d %q", bad, code, stdout)
		}
	}

	// A daemon failure under -o text is text on stderr, with its exit
	// status.
	d.Set(rpc.MethodScrollbackRead, rpc.Errorf(rpc.CodeNotFound, "no Session rev"))
	e, out, errb := cliEnv(t, d, nil, nil, "")
	if code, stdout := runCLI(t, e, out, "scrollback", "rev", "-o", "text"); code != cli.ExitError || stdout != "" || !strings.HasPrefix(errb.String(), "dlgt: NOT_FOUND: no Session rev\n") {
		t.Fatalf("failure under -o text: exit %d %q %q", code, stdout, errb)
	}

	// Profiles are read client-side; values of their environment never show.
	profiles := filepath.Join(t.TempDir(), "profiles.toml")
	if err := os.WriteFile(profiles, []byte("[profiles.review]\nharness = \"claude\"\nmodel = \"opus\"\nharness_options = [\"max-turns=3\"]\n[profiles.review.environment]\nSECRET_TOKEN = \"hunter2\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, out, _ = cliEnv(t, d, map[string]string{"DLGT_PROFILES": profiles}, nil, "")
	code, stdout := runCLI(t, e, out, "profiles", "-o", "text")
	if code != cli.ExitOK || !strings.Contains(stdout, "review   claude   opus   -       max-turns=3      SECRET_TOKEN\n") || strings.Contains(stdout, "hunter2") {
		t.Fatalf("profiles text: exit %d\n%s", code, stdout)
	}
	// With none, the table says where they would be defined.
	missing := filepath.Join(t.TempDir(), "none.toml")
	e, out, _ = cliEnv(t, d, map[string]string{"DLGT_PROFILES": missing}, nil, "")
	if code, stdout := runCLI(t, e, out, "profiles", "-o", "text"); code != cli.ExitOK || !strings.Contains(stdout, "(no profiles: define them in "+missing+",") {
		t.Fatalf("no profiles: exit %d\n%s", code, stdout)
	}
}
