package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/internal/shellcomplete"
)

// Dynamic shell completion: the candidates are internal/shellcomplete.s.

func noFiles(matches []string) ([]string, cobra.ShellCompDirective) {
	return matches, cobra.ShellCompDirectiveNoFileComp
}

// completeSessionArg completes SESSION, the first argument.
func (e fullEnv) completeSessionArg(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return noFiles(nil)
	}
	return noFiles(e.sessionCandidates(cmd, toComplete))
}

func (e fullEnv) sessionCandidates(cmd *cobra.Command, prefix string) []string {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := e.Client()
	if err != nil {
		return nil
	}
	return shellcomplete.Sessions(ctx, c, prefix)
}

func (e fullEnv) completeHarness(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return noFiles(shellcomplete.Harnesses(e.Registry()))
}

func (e fullEnv) completeProfile(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	profiles, err := e.LoadProfiles()
	if err != nil {
		return noFiles(nil)
	}
	return noFiles(shellcomplete.Profiles(profiles, toComplete))
}

// completeModel completes --model from the chosen harness's model list
// (--harness, else the profile's harness, else every harness).
func (e fullEnv) completeModel(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	which, _ := cmd.Flags().GetString("harness")
	if which == "" {
		if name, _ := cmd.Flags().GetString("profile"); name != "" {
			if profiles, err := e.LoadProfiles(); err == nil {
				which = profiles[name].Harness
			}
		}
	}
	return noFiles(shellcomplete.Models(e.Registry(), which, toComplete))
}

// registerCompletions wires the completions into every command of the
// tree: SESSION arguments, and the --session, --harness, --profile and
// --model flags wherever they exist.
func (e fullEnv) registerCompletions(c *cobra.Command) {
	if cli.SessionArgCommands[c.CommandPath()] && c.ValidArgsFunction == nil {
		c.ValidArgsFunction = e.completeSessionArg
	}
	flags := map[string]func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective){
		"session": func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return noFiles(e.sessionCandidates(cmd, toComplete))
		},
		"harness": e.completeHarness,
		"profile": e.completeProfile,
		"model":   e.completeModel,
	}
	for name, fn := range flags {
		if c.Flags().Lookup(name) != nil {
			c.RegisterFlagCompletionFunc(name, fn)
		}
	}
	for _, sub := range c.Commands() {
		e.registerCompletions(sub)
	}
}
