package main

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Dynamic shell completion. Candidates come from the running daemon
// (Session ids and aliases), the client's profiles file, and the harness
// adapters' built-in model lists. Completion never starts a daemon: with
// none running, Sessions simply do not complete.

// completeTimeout bounds the daemon query of one completion.
const completeTimeout = time.Second

func noFiles(matches []string) ([]string, cobra.ShellCompDirective) {
	return matches, cobra.ShellCompDirectiveNoFileComp
}

// completeSessionArg completes SESSION, the first argument.
func (e *env) completeSessionArg(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return noFiles(nil)
	}
	return noFiles(e.sessionCandidates(cmd, toComplete))
}

// sessionCandidates asks an already running daemon for its Sessions: each
// alias and id that starts with prefix, described by title and state. Only
// an active alias addresses a Session (the contract's "active human
// alias"; a terminal Session's alias is free, may name another Session by
// now, and is NOT_FOUND while it does not), so a stopped or failed Session
// is offered by its id alone.
func (e *env) sessionCandidates(cmd *cobra.Command, prefix string) []string {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completeTimeout)
	defer cancel()
	cl, err := e.client()
	if err != nil {
		return nil
	}
	if cl, err = cl.WithHost("local"); err != nil {
		return nil
	}
	c, err := cl.DialExisting(ctx, "")
	if err != nil {
		return nil
	}
	defer c.Close()
	list, err := rpc.SessionList.Call(ctx, c, rpc.SessionListParams{All: true})
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range list.Sessions {
		desc := "\t" + render.OneLine(s.Title, 40) + " (" + s.State + ")"
		alias := s.Alias
		if s.State == rpc.StateStopped || s.State == rpc.StateFailed {
			alias = ""
		}
		for _, name := range []string{alias, s.ID} {
			if name != "" && strings.HasPrefix(name, prefix) {
				out = append(out, name+desc)
			}
		}
	}
	return out
}

// completeHarness completes --harness with the registry's harnesses,
// described by their display names.
func (e *env) completeHarness(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, d := range e.registry() {
		out = append(out, d.Name+"\t"+d.DisplayName)
	}
	return noFiles(out)
}

func (e *env) completeProfile(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	profiles, err := e.loadProfiles()
	if err != nil {
		return noFiles(nil)
	}
	var out []string
	for name, p := range profiles {
		if strings.HasPrefix(name, toComplete) {
			out = append(out, name+"\t"+p.Harness)
		}
	}
	sort.Strings(out)
	return noFiles(out)
}

// completeModel completes --model from the chosen harness's model list
// (--harness, else the profile's harness, else every harness).
func (e *env) completeModel(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	which, _ := cmd.Flags().GetString("harness")
	if which == "" {
		if name, _ := cmd.Flags().GetString("profile"); name != "" {
			if profiles, err := e.loadProfiles(); err == nil {
				which = profiles[name].Harness
			}
		}
	}
	var lists []rpc.ModelListResult
	for _, d := range e.registry() {
		if which == "" || which == d.Name {
			lists = append(lists, d.Harness.Models(false))
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, m := range l.Models {
			for _, name := range append([]string{m.ID}, m.Aliases...) {
				if !seen[name] && strings.HasPrefix(name, toComplete) {
					seen[name] = true
					out = append(out, name+"\t"+l.Harness)
				}
			}
		}
	}
	return noFiles(out)
}

// registerCompletions wires the completions into every command of the
// tree: SESSION arguments, and the --session, --harness, --profile and
// --model flags wherever they exist.
func (e *env) registerCompletions(c *cobra.Command) {
	if sessionArgCommands[c.CommandPath()] && c.ValidArgsFunction == nil {
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
