package client

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// HarnessList joins the names of ds for a sentence: "claude or codex",
// "claude, codex or fake".
func HarnessList(ds []harness.Descriptor) string {
	return harness.OrList(harness.Names(ds))
}

// Profile is one [profiles.NAME] table of the profiles file: a named
// launch preset (ResolveLaunch applies it).
type Profile struct {
	Harness        string            `toml:"harness"`
	Model          string            `toml:"model"`
	Effort         string            `toml:"effort"`
	HarnessOptions []string          `toml:"harness_options"`
	Environment    map[string]string `toml:"environment"`
	// Host runs the profile's Sessions on another machine (through ssh).
	Host string `toml:"host"`
	// AutoApprove false launches the profile's Sessions with the
	// harness's own permission prompts (session.create auto_approve), so
	// whoever may answer them (session.respond) decides each tool call;
	// absent or true keeps the default.
	AutoApprove *bool `toml:"auto_approve"`
	// Worktree runs the profile's Sessions in a git worktree of their own
	// (session.create worktree, the branch named from the alias).
	Worktree bool `toml:"worktree"`
	// Warm keeps this many harness processes of the profile's launch
	// started ahead on the daemon (session.warm), so a Session launched
	// through the profile skips the harness's start. 0 (the default)
	// keeps none; at most 4. Front-ends that launch through profiles
	// (dlgt mcp, dlgt session create) ask for them.
	Warm int `toml:"warm"`
}

// maxProfilesBytes bounds the profiles file; it is configuration, not data.
const maxProfilesBytes = 1 << 20

// maxProfilesNesting bounds bracket nesting: the TOML decoder slows down
// sharply with deeply nested inline tables (seconds at a few thousand
// levels), and no profile needs more than a few.
const maxProfilesNesting = 32

// nestingDepth is the deepest [ / { nesting outside quoted strings and
// comments; it is a cheap guard run before the real decoder.
func nestingDepth(data []byte) int {
	depth, deepest := 0, 0
	var quote byte
	comment := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case comment:
			if c == '\n' {
				comment = false
			}
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			comment = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// Profiles are the profiles of one file, by name.
type Profiles map[string]Profile

// ProfilesPath is $DLGT_PROFILES, else $DLGT_HOME-or-default/profiles.toml.
func (c *Client) ProfilesPath() (string, error) {
	if p := c.getenv("DLGT_PROFILES"); p != "" {
		return p, nil
	}
	p, err := c.Paths()
	if err != nil {
		return "", err
	}
	return filepath.Join(p.Home, "profiles.toml"), nil
}

// LoadProfiles reads the client-side profiles file. A missing file means
// no profiles; unknown keys, wrong types and bad harness names are
// INVALID_ARGUMENT naming the place.
func (c *Client) LoadProfiles() (Profiles, error) {
	path, err := c.ProfilesPath()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Profiles{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseProfilesFor(path, data, c.opts.Harnesses)
}

// ParseProfiles parses the profiles file data read from path (named in
// errors) whose harness names are the registry's (harness.All). It is
// bounded: at most 1 MiB and 32 levels of nesting.
func ParseProfiles(path string, data []byte) (Profiles, error) {
	return ParseProfilesFor(path, data, harness.All())
}

// ParseProfilesFor is ParseProfiles for the harnesses known: a profile
// naming another is INVALID_ARGUMENT naming them.
func ParseProfilesFor(path string, data []byte, known []harness.Descriptor) (Profiles, error) {
	if len(data) > maxProfilesBytes {
		return nil, rpc.Errorf(rpc.CodeInvalidArgument, "%s is larger than %d bytes", path, maxProfilesBytes)
	}
	if d := nestingDepth(data); d > maxProfilesNesting {
		return nil, rpc.Errorf(rpc.CodeInvalidArgument, "%s nests arrays or tables %d deep (at most %d)", path, d, maxProfilesNesting)
	}
	var file struct {
		Profiles Profiles `toml:"profiles"`
	}
	md, err := toml.Decode(string(data), &file)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidArgument, "%s: %v", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, rpc.Errorf(rpc.CodeInvalidArgument, "%s: unknown key %q", path, und[0].String())
	}
	for name, p := range file.Profiles {
		if name == "" || strings.ContainsAny(name, " \t\n/") {
			return nil, rpc.Errorf(rpc.CodeInvalidArgument, "%s: invalid profile name %q", path, name)
		}
		if _, err := harness.Find(known, p.Harness); p.Harness != "" && err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidArgument, "%s: profile %q: harness must be %s", path, name, HarnessList(known))
		}
		if p.Warm < 0 || p.Warm > MaxWarm {
			return nil, rpc.Errorf(rpc.CodeInvalidArgument, "%s: profile %q: warm must be 0 to %d", path, name, MaxWarm)
		}
	}
	if file.Profiles == nil {
		file.Profiles = Profiles{}
	}
	return file.Profiles, nil
}

// List is the profile.list answer: every profile by name, with the names
// of its environment variables and never their values (they may be
// secrets).
func (ps Profiles) List() rpc.ProfileListResult {
	res := rpc.ProfileListResult{Profiles: []rpc.Profile{}}
	for name, pc := range ps {
		keys := make([]string, 0, len(pc.Environment))
		for k := range pc.Environment {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		res.Profiles = append(res.Profiles, rpc.Profile{
			Name: name, Harness: pc.Harness, Model: pc.Model, Effort: pc.Effort,
			HarnessOptions: pc.HarnessOptions, EnvironmentKeys: keys, Worktree: pc.Worktree, Warm: pc.Warm,
		})
	}
	sort.Slice(res.Profiles, func(i, j int) bool { return res.Profiles[i].Name < res.Profiles[j].Name })
	return res
}
