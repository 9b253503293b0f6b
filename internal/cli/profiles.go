package cli

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// LoadProfiles reads the client-side profiles file (client.LoadProfiles:
// a missing file is no profiles; bad content is INVALID_ARGUMENT naming
// the place), with the harnesses of this client's registry.
func (e *Env) LoadProfiles() (client.Profiles, error) {
	c, err := e.Client()
	if err != nil {
		return nil, err
	}
	return c.LoadProfiles()
}

// ProfileList answers profile.list (the proxy and `dlgt profiles`).
func (e *Env) ProfileList(params json.RawMessage) (rpc.ProfileListResult, error) {
	var p rpc.ProfileListParams
	if err := rpc.Decode(params, &p); err != nil {
		return rpc.ProfileListResult{}, err
	}
	c, err := e.Client()
	if err != nil {
		return rpc.ProfileListResult{}, err
	}
	return c.ProfileList(context.Background(), p)
}

func newProfilesCommand(e *Env) *cobra.Command {
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
			text, err := TextOutput(cmd)
			if err != nil {
				return PrintFailure(cmd, err)
			}
			res, err := e.ProfileList(nil)
			if err != nil {
				return PrintFailure(cmd, err)
			}
			if text {
				c, _ := e.Client() // it was built to list them
				file, _ := c.ProfilesPath()
				return render.ProfileTable(cmd.OutOrStdout(), res, file)
			}
			return PrintOK(cmd, res)
		},
	}
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}
