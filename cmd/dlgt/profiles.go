package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// profileConfig is one [profiles.NAME] table of profiles.toml.
type profileConfig struct {
	Harness        string            `toml:"harness"`
	Model          string            `toml:"model"`
	Effort         string            `toml:"effort"`
	HarnessOptions []string          `toml:"harness_options"`
	Environment    map[string]string `toml:"environment"`
	// Host runs the profile's Sessions on another machine (remote.go).
	Host string `toml:"host"`
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

// profilesPath is $DLGT_PROFILES, else $DLGT_HOME-or-default/profiles.toml.
func (e *env) profilesPath() (string, error) {
	if p := e.getenv("DLGT_PROFILES"); p != "" {
		return p, nil
	}
	p, err := e.paths()
	if err != nil {
		return "", err
	}
	return filepath.Join(p.Home, "profiles.toml"), nil
}

// loadProfiles reads the client-side profiles file. A missing file means
// no profiles; unknown keys, wrong types and bad harness names are errors
// naming the place.
func (e *env) loadProfiles() (map[string]profileConfig, error) {
	path, err := e.profilesPath()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]profileConfig{}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseProfilesFor(path, data, e.registry())
}

// parseProfiles is parseProfilesFor with the harness registry.
func parseProfiles(path string, data []byte) (map[string]profileConfig, error) {
	return parseProfilesFor(path, data, harness.All())
}

// parseProfilesFor parses a profiles file whose harness names must be
// among known.
func parseProfilesFor(path string, data []byte, known []harness.Descriptor) (map[string]profileConfig, error) {
	if len(data) > maxProfilesBytes {
		return nil, rpc.Errorf(rpc.CodeInvalidArgument, "%s is larger than %d bytes", path, maxProfilesBytes)
	}
	if d := nestingDepth(data); d > maxProfilesNesting {
		return nil, rpc.Errorf(rpc.CodeInvalidArgument, "%s nests arrays or tables %d deep (at most %d)", path, d, maxProfilesNesting)
	}
	var file struct {
		Profiles map[string]profileConfig `toml:"profiles"`
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
			return nil, rpc.Errorf(rpc.CodeInvalidArgument, "%s: profile %q: harness must be %s", path, name, harnessList(known))
		}
	}
	if file.Profiles == nil {
		file.Profiles = map[string]profileConfig{}
	}
	return file.Profiles, nil
}

// profileList answers profile.list (the proxy and `dlgt profiles`).
func (e *env) profileList(params json.RawMessage) (any, error) {
	var p rpc.ProfileListParams
	if err := rpc.Decode(params, &p); err != nil {
		return nil, err
	}
	profiles, err := e.loadProfiles()
	if err != nil {
		return nil, err
	}
	res := rpc.ProfileListResult{Profiles: []rpc.Profile{}}
	for name, pc := range profiles {
		keys := make([]string, 0, len(pc.Environment))
		for k := range pc.Environment {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		res.Profiles = append(res.Profiles, rpc.Profile{
			Name: name, Harness: pc.Harness, Model: pc.Model, Effort: pc.Effort,
			HarnessOptions: pc.HarnessOptions, EnvironmentKeys: keys,
		})
	}
	sort.Slice(res.Profiles, func(i, j int) bool { return res.Profiles[i].Name < res.Profiles[j].Name })
	return res, nil
}

func newProfilesCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List the launch profiles of the client-side profiles file",
		Long: `List named launch presets from $DLGT_HOME/profiles.toml (DLGT_PROFILES overrides):

  [profiles.review]
  harness = "claude"
  model = "opus"
  effort = "high"
  harness_options = ["max-turns=3"]
  [profiles.review.environment]
  MY_VAR = "value"

Environment values are never printed, only their names.`,
		Example: `  dlgt profiles --pretty
  dlgt profiles -o text`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := textOutput(cmd)
			if err != nil {
				return printFailure(cmd, err)
			}
			res, err := e.profileList(nil)
			if err != nil {
				return printFailure(cmd, err)
			}
			if list, ok := res.(rpc.ProfileListResult); ok && text {
				file, _ := e.profilesPath() // it was found to list them
				return writeProfileTable(cmd.OutOrStdout(), list, file)
			}
			return printOK(cmd, res)
		},
	}
	addPretty(cmd)
	addOutputFlag(cmd)
	return cmd
}
