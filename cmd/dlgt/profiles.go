package main

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// loadProfiles reads the client-side profiles file (client.LoadProfiles:
// a missing file is no profiles; bad content is INVALID_ARGUMENT naming
// the place), with the harnesses of this client's registry.
func (e *env) loadProfiles() (client.Profiles, error) {
	c, err := e.client()
	if err != nil {
		return nil, err
	}
	return c.LoadProfiles()
}

// profileList answers profile.list (the proxy and `dlgt profiles`).
func (e *env) profileList(params json.RawMessage) (rpc.ProfileListResult, error) {
	var p rpc.ProfileListParams
	if err := rpc.Decode(params, &p); err != nil {
		return rpc.ProfileListResult{}, err
	}
	c, err := e.client()
	if err != nil {
		return rpc.ProfileListResult{}, err
	}
	return c.ProfileList(context.Background(), p)
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
			if text {
				c, _ := e.client() // it was built to list them
				file, _ := c.ProfilesPath()
				return render.ProfileTable(cmd.OutOrStdout(), res, file)
			}
			return printOK(cmd, res)
		},
	}
	addPretty(cmd)
	addOutputFlag(cmd)
	return cmd
}
