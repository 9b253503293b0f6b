package harness

import (
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The registry's order is what every listing shows; names, variables and
// display names are unique, and each descriptor agrees with its adapter.
func TestRegistryOrderAndUniqueness(t *testing.T) {
	all := All()
	if got, want := Names(all), []string{"claude", "codex", "gemini", "copilot"}; !slices.Equal(got, want) {
		t.Fatalf("Names(All()) = %v, want %v", got, want)
	}
	nameRE := regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
	seen := map[string]string{}
	for _, d := range all {
		if !nameRE.MatchString(d.Name) {
			t.Errorf("%q is not a usable harness name (it is a flag value and an id prefix)", d.Name)
		}
		for _, key := range []string{"name " + d.Name, "display " + d.DisplayName, "env " + d.BinEnv, "config " + d.Config.Env} {
			if other, dup := seen[key]; dup {
				t.Errorf("%s shared by %s and %s", key, other, d.Name)
			}
			seen[key] = d.Name
		}
		if d.Harness == nil || d.Harness.Name() != d.Name || d.Harness.Info().Name != d.Name {
			t.Errorf("%s: adapter does not carry the descriptor's name", d.Name)
		}
		if d.DisplayName == "" || d.BinEnv == "" || d.BinName == "" || d.Install == "" || d.Config.Env == "" || d.Config.Home == "" {
			t.Errorf("%s: incomplete descriptor %+v", d.Name, d)
		}
		if !strings.Contains(d.Install, d.Harness.Info().TestedVersion) {
			t.Errorf("%s: install hint %q does not pin the tested version", d.Name, d.Install)
		}
		// The adapter's Binary honours the descriptor's variable.
		if bin, err := d.Harness.Binary(map[string]string{d.BinEnv: "/opt/x/" + d.BinName}); err != nil || bin != "/opt/x/"+d.BinName {
			t.Errorf("%s: Binary with %s set = %q, %v", d.Name, d.BinEnv, bin, err)
		}
	}
	// A fresh slice each call: a caller's edit does not leak.
	all[0].Name = "changed"
	if All()[0].Name == "changed" {
		t.Fatal("All() shares its slice")
	}
}

func TestFindUnknown(t *testing.T) {
	d, err := Lookup("codex")
	if err != nil || d.DisplayName != "Codex" {
		t.Fatalf("Lookup(codex) = %+v, %v", d, err)
	}
	_, err = Lookup("nosuch")
	var ue *UnknownError
	if !errors.As(err, &ue) || ue.Name != "nosuch" || !slices.Equal(ue.Known, []string{"claude", "codex", "gemini", "copilot"}) {
		t.Fatalf("Lookup(nosuch) = %v", err)
	}
	if got, want := err.Error(), `unknown harness "nosuch" (known: claude, codex, gemini, copilot)`; got != want {
		t.Fatalf("error %q, want %q", got, want)
	}
}

func TestBinEnvAndConfigDir(t *testing.T) {
	env := map[string]string{"DLGT_CODEX_BIN": "/x/codex", "HOME": "/home/u", "OTHER": "y"}
	got := BinEnv(All(), func(k string) string { return env[k] })
	if len(got) != 1 || got["DLGT_CODEX_BIN"] != "/x/codex" {
		t.Fatalf("BinEnv = %v", got)
	}
	c := ConfigDir{Env: "CODEX_HOME", Home: ".codex"}
	if dir, err := c.Resolve(func(k string) string { return env[k] }); err != nil || dir != filepath.Join("/home/u", ".codex") {
		t.Fatalf("Resolve = %q, %v", dir, err)
	}
	env["CODEX_HOME"] = "rel"
	if _, err := c.Resolve(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "CODEX_HOME") {
		t.Fatalf("relative CODEX_HOME: %v", err)
	}
}
