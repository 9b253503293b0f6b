package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

// FuzzParseProfiles feeds parseProfiles arbitrary profiles.toml contents.
// It must never panic; a failure is always INVALID_ARGUMENT naming the
// file; a success only holds profiles with valid names and harnesses.
//
// Nested inline tables are kept shallow in the seeds: the TOML decoder is
// superlinear in their depth (about 1 s at depth 2000, 5 s at 4000), so
// deep ones only slow the fuzzer down.
func FuzzParseProfiles(f *testing.F) {
	for _, s := range []string{
		"",
		"[profiles.review]\nharness = \"claude\"\nmodel = \"opus\"\neffort = \"high\"\nharness_options = [\"max-turns=3\"]\n[profiles.review.environment]\nMY_VAR = \"value\"\n",
		"[profiles.fast]\nharness = \"codex\"\n[profiles.slow]\nharness = \"claude\"\nmodel = \"sonnet[1m]\"\n",
		"[profiles.x]\nharness = \"gemini\"\n",
		"[profiles.\"a b\"]\nharness = \"claude\"\n",
		"[profiles.\"\"]\n",
		"[profiles.x]\nunknown = 1\n",
		"[profiles.x]\nharness = 7\n",
		"[profiles.x]\nharness = \"claude\"\nharness = \"codex\"\n",
		"[profiles]\nx = \"not a table\"\n",
		"profiles = 1\n",
		"[[profiles.x]]\nharness = \"claude\"\n",
		"[profiles.x.environment]\n\"\" = \"\"\n\"A=B\" = \"\\u0000\"\n",
		"[profiles.x]\nharness_options = [1, \"a\"]\n",
		"[profiles.x]\nmodel = '''\nmulti\nline'''\n",
		"[profiles.x]\nmodel = \"\\uD800\"\n",
		"[profiles.x]\nmodel = \"\xff\xfe\"\n",
		"a = [" + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "]\n",
		"a = " + strings.Repeat("{b=", 200) + "1" + strings.Repeat("}", 200) + "\n",
		"[profiles.x]\nenvironment = { A = \"1\", A = \"2\" }\n",
		"[profiles.\"\u202e\"]\nharness = \"claude\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "/fuzz/profiles.toml"
		profiles, err := parseProfiles(path, data)
		if err != nil {
			var re *rpc.Error
			if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument {
				t.Fatalf("error %v is not INVALID_ARGUMENT", err)
			}
			if !strings.Contains(re.Message, path) {
				t.Fatalf("error %q does not name the file", re.Message)
			}
			if profiles != nil {
				t.Fatalf("error with profiles %v", profiles)
			}
			return
		}
		if profiles == nil {
			t.Fatal("success with a nil map")
		}
		for name, p := range profiles {
			if name == "" || strings.ContainsAny(name, " \t\n/") {
				t.Fatalf("accepted profile name %q", name)
			}
			if p.Harness != "" && p.Harness != "claude" && p.Harness != "codex" {
				t.Fatalf("accepted harness %q", p.Harness)
			}
		}
	})
}
