package client_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/rpc"
)

// The profiles file's parser (moved here from cmd/dlgt with it).

func TestParseProfiles(t *testing.T) {
	const good = `
[profiles.review]
harness = "claude"
model = "opus"
effort = "high"
harness_options = ["max-turns=3"]
[profiles.review.environment]
MY_VAR = "value"

[profiles.quick]
harness = "codex"
`
	got, err := client.ParseProfiles("profiles.toml", []byte(good))
	if err != nil {
		t.Fatalf("parseProfiles: %v", err)
	}
	r := got["review"]
	if len(got) != 2 || r.Harness != "claude" || r.Model != "opus" || r.Effort != "high" ||
		len(r.HarnessOptions) != 1 || r.HarnessOptions[0] != "max-turns=3" || r.Environment["MY_VAR"] != "value" || got["quick"].Harness != "codex" {
		t.Fatalf("parsed %+v", got)
	}
	if got, err := client.ParseProfiles("p.toml", nil); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("empty file: %v %v", got, err)
	}

	bad := []struct {
		name, data, want string
	}{
		{"unknown top-level key", "[profile.review]\nharness = \"claude\"\n", "unknown key"},
		{"unknown profile key", "[profiles.review]\nharnes = \"claude\"\n", "harnes"},
		{"bad harness", "[profiles.review]\nharness = \"nosuch\"\n", "harness must be claude, codex, gemini or copilot"},
		{"wrong type", "[profiles.review]\nharness_options = \"max-turns=3\"\n", "p.toml"},
		{"environment value type", "[profiles.review.environment]\nA = 1\n", "p.toml"},
		{"invalid name", "[profiles.\"my review\"]\nharness = \"claude\"\n", "invalid profile name"},
		{"not TOML", "[profiles.review\n", "p.toml"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.ParseProfiles("p.toml", []byte(tt.data))
			var re *rpc.Error
			if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument || !strings.Contains(re.Message, tt.want) {
				t.Fatalf("parseProfiles = %v, want INVALID_ARGUMENT mentioning %q", err, tt.want)
			}
		})
	}
	t.Run("oversized", func(t *testing.T) {
		if _, err := client.ParseProfiles("p.toml", make([]byte, 1<<20+1)); err == nil {
			t.Fatal("want an error for an oversized file")
		}
	})
}

func TestParseProfilesRejectsDeepNesting(t *testing.T) {
	deep := "[profiles.p]\nharness_options = " + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + "\n"
	if _, err := client.ParseProfiles("p.toml", []byte(deep)); !errors.Is(err, rpc.ErrInvalidArgument) || !strings.Contains(err.Error(), "deep") {
		t.Fatalf("deep nesting: %v", err)
	}
	// Brackets inside strings and comments do not count.
	ok := "# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n[profiles.p]\nmodel = \"" + strings.Repeat("[{", 40) + "\"\n"
	if _, err := client.ParseProfiles("p.toml", []byte(ok)); err != nil {
		t.Fatalf("quoted brackets: %v", err)
	}
}

// FuzzParseProfiles feeds ParseProfiles arbitrary profiles.toml contents.
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
		profiles, err := client.ParseProfiles(path, data)
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
			if p.Harness != "" && p.Harness != "claude" && p.Harness != "codex" && p.Harness != "gemini" && p.Harness != "copilot" {
				t.Fatalf("accepted harness %q", p.Harness)
			}
		}
	})
}

// warm is bounded like the daemon's per-shape bound, carried by the
// resolved launch, and turned into the session.warm of that launch; a
// worktree launch has no shape to keep warm.
func TestProfileWarm(t *testing.T) {
	if _, err := client.ParseProfiles("p.toml", []byte("[profiles.a]\nharness = \"codex\"\nwarm = 5\n")); err == nil || !strings.Contains(err.Error(), "warm must be 0 to 4") {
		t.Fatalf("warm = 5: %v", err)
	}
	ps, err := client.ParseProfiles("p.toml", []byte("[profiles.a]\nharness = \"codex\"\nwarm = 2\n"))
	if err != nil || ps["a"].Warm != 2 || ps.List().Profiles[0].Warm != 2 {
		t.Fatalf("%+v %v", ps, err)
	}
	l := client.Launch{Warm: 2, Params: rpc.SessionCreateParams{Harness: "codex", Cwd: "/w", Model: "m", Environment: map[string]string{"A": "1"}, Rows: 30}}
	p, ok := l.WarmParams(l.Warm)
	if !ok || p.Harness != "codex" || p.Cwd != "/w" || p.Model != "m" || p.Environment["A"] != "1" || p.Rows != 30 || p.Spares != 2 {
		t.Fatalf("WarmParams = %+v %v", p, ok)
	}
	l.Params.Worktree = &rpc.WorktreeOption{}
	if _, ok := l.WarmParams(1); ok {
		t.Fatal("a worktree launch has warm params")
	}
}
