package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/internal/setup"
	"github.com/dlgt-dev/dlgt/mcp"
)

// `dlgt mcp install` writes the entry `dlgt mcp config` prints into the
// harness's user config, so every launch has the server. The edit
// (internal/setup) is a splice: the rest of the file stays byte for byte,
// and the result is parsed again and compared with the original before
// anything is written.

// mcpInstallLong is mcp install's help: the registry's harnesses and the
// file each one's entry goes to.
func mcpInstallLong(reg []harness.Descriptor) string {
	var b strings.Builder
	b.WriteString(`Add the server entry that "dlgt mcp config" prints to the user config of
the harness named with --harness, so every launch has it:

`)
	for _, d := range mcpHarnesses(reg, harness.MCPNone) {
		fmt.Fprintf(&b, "  %-7s %s\n", d.Name, setup.InstallTarget(d))
	}
	b.WriteString(`
The entry replaces any earlier "dlgt" entry as a whole; everything else in
the file is left as it is, byte for byte (the edited file is parsed again
and compared with the original before it is written). Before a file is
changed it is copied to FILE.dlgt-backup-TIME; the change is printed as a
unified diff. A file that already holds the entry is not touched
("unchanged"), so running install twice changes nothing. A file that does
not parse is refused and left alone. Run it while no Claude Code is
running: Claude Code rewrites ~/.claude.json itself.

Prints {"ok":true,"harness":...,"files":[{"path","status","backup","diff"}]};
-o text prints each file's status and diff.`)
	return b.String()
}

func newMCPInstallCommand(e *env) *cobra.Command {
	var (
		approve bool
		waitMax time.Duration
		forward []string
		hf      *cli.HarnessFlags
	)
	cmd := &cobra.Command{
		Use:   "install --harness NAME [--approve]",
		Short: "Add dlgt's MCP server to a harness's user config (what mcp config prints, kept)",
		Long:  mcpInstallLong(e.Registry()),
		Example: `  dlgt mcp install --harness codex -o text
  dlgt mcp install --harness claude --approve -o text`,
		Args: cli.JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := cli.TextOutput(cmd)
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			d, err := fullEnv{e}.mcpHarness(hf)
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			spec, err := fullEnv{e}.mcpServerSpec(cmd, d, approve, waitMax, forward)
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			files, err := setup.Install(d, spec, fullEnv{e}.configDir)
			if err != nil {
				return cli.PrintFailure(cmd, err)
			}
			if text {
				render.SetupFiles(cmd.OutOrStdout(), files)
				return nil
			}
			return cli.PrintOK(cmd, struct {
				Harness string       `json:"harness"`
				Files   []setup.File `json:"files"`
			}{d.Name, files})
		},
	}
	hf = e.AddHarnessFlags(cmd, false, "the harness whose user config gets the entry: "+mcpHarnessList(e.Registry()))
	f := cmd.Flags()
	f.BoolVar(&approve, "approve", false, "let the leader call every dlgt tool without asking")
	f.DurationVar(&waitMax, "wait-max", mcp.WaitDefault, "bound of one wait call, passed to dlgt mcp")
	f.StringArrayVar(&forward, "forward-env", nil, "Codex: also forward this variable to the server (repeatable)")
	cli.AddPretty(cmd)
	cli.AddOutputFlag(cmd)
	return cmd
}

// configDir resolves a harness's config directory with the command's
// environment; an error is a usage error naming the variable to fix.
func (e fullEnv) configDir(c harness.ConfigDir) (string, error) {
	dir, err := c.Resolve(e.Getenv)
	if err != nil {
		return "", cli.Usagef("%v", err)
	}
	return dir, nil
}
