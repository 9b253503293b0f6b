package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/internal/setup"
	"github.com/dlgt-dev/dlgt/mcp"
	"github.com/dlgt-dev/dlgt/rpc"
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
		fmt.Fprintf(&b, "  %-7s %s\n", d.Name, mcpInstallTarget(d))
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

// mcpInstallTarget says where d's entry is written.
func mcpInstallTarget(d harness.Descriptor) string {
	switch d.MCP {
	case harness.MCPClaudeJSON:
		return fmt.Sprintf(`${%s:-~}/.claude.json, "mcpServers"."dlgt"
          (with --approve also "mcp__dlgt" in permissions.allow of
          %s/settings.json)`, d.Config.Env, d.Config.Describe())
	case harness.MCPCodexTOML:
		return d.Config.Describe() + "/config.toml, [mcp_servers.dlgt]"
	case harness.MCPGeminiJSON:
		return d.Config.Describe() + `/settings.json, "mcpServers"."dlgt"
          (with --approve "trust": true: no confirmation for its tools)`
	case harness.MCPCopilotJSON:
		return d.Config.Describe() + `/mcp-config.json, "mcpServers"."dlgt"
          (--approve adds nothing: allow its tools in Copilot itself)`
	}
	return ""
}

func newMCPInstallCommand(e *env) *cobra.Command {
	var (
		approve bool
		waitMax time.Duration
		forward []string
		hf      *harnessFlags
	)
	cmd := &cobra.Command{
		Use:   "install --harness NAME [--approve]",
		Short: "Add dlgt's MCP server to a harness's user config (what mcp config prints, kept)",
		Long:  mcpInstallLong(e.registry()),
		Example: `  dlgt mcp install --harness codex -o text
  dlgt mcp install --harness claude --approve -o text`,
		Args: jsonArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := textOutput(cmd)
			if err != nil {
				return printFailure(cmd, err)
			}
			d, err := e.mcpHarness(hf)
			if err != nil {
				return printFailure(cmd, err)
			}
			spec, err := e.mcpServerSpec(cmd, d, approve, waitMax, forward)
			if err != nil {
				return printFailure(cmd, err)
			}
			var files []setup.File
			switch d.MCP {
			case harness.MCPClaudeJSON:
				files, err = setup.InstallClaude(d, spec, e.configDir)
			case harness.MCPCodexTOML:
				files, err = setup.InstallCodex(d, spec, e.configDir)
			case harness.MCPGeminiJSON:
				files, err = setup.InstallGemini(d, spec, e.configDir)
			case harness.MCPCopilotJSON:
				files, err = setup.InstallCopilot(d, spec, e.configDir)
			}
			if err != nil {
				return printFailure(cmd, err)
			}
			if text {
				w := cmd.OutOrStdout()
				for _, f := range files {
					if f.Status == setup.Unchanged {
						fmt.Fprintf(w, "unchanged %s (it already has this entry)\n", f.Path)
						continue
					}
					fmt.Fprintf(w, "written   %s", f.Path)
					if f.Backup != "" {
						fmt.Fprintf(w, " (backup %s)", f.Backup)
					}
					fmt.Fprintf(w, "\n%s", f.Diff)
				}
				return nil
			}
			body, err := rpc.Marshal(struct {
				OK      bool         `json:"ok"`
				Harness string       `json:"harness"`
				Files   []setup.File `json:"files"`
			}{true, d.Name, files})
			if err != nil {
				return err
			}
			return writeJSONLine(cmd, body)
		},
	}
	hf = e.addHarnessFlags(cmd, false, "the harness whose user config gets the entry: "+mcpHarnessList(e.registry()))
	f := cmd.Flags()
	f.BoolVar(&approve, "approve", false, "let the leader call every dlgt tool without asking")
	f.DurationVar(&waitMax, "wait-max", mcp.WaitDefault, "bound of one wait call, passed to dlgt mcp")
	f.StringArrayVar(&forward, "forward-env", nil, "Codex: also forward this variable to the server (repeatable)")
	addPretty(cmd)
	addOutputFlag(cmd)
	return cmd
}

// configDir resolves a harness's config directory with the command's
// environment; an error is a usage error naming the variable to fix.
func (e *env) configDir(c harness.ConfigDir) (string, error) {
	dir, err := c.Resolve(e.getenv)
	if err != nil {
		return "", usageError("%v", err)
	}
	return dir, nil
}
