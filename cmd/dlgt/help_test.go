package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command's help has a one-line summary, an example (for commands
// that run something), and the exit statuses.
func TestEveryCommandHelp(t *testing.T) {
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || c.Parent() != nil && c.Parent().Name() == "completion" {
			return
		}
		var out bytes.Buffer
		c.SetOut(&out)
		if err := c.Help(); err != nil {
			t.Fatalf("%s: %v", c.CommandPath(), err)
		}
		help := out.String()
		if strings.TrimSpace(c.Short) == "" || strings.Contains(c.Short, "\n") {
			t.Errorf("%s: no one-line summary", c.CommandPath())
		}
		if c.Runnable() && c.Example == "" {
			t.Errorf("%s: no example", c.CommandPath())
		}
		if !strings.Contains(help, "Exit statuses:") || !strings.Contains(help, "5  SESSION_BUSY") {
			t.Errorf("%s: help lacks the exit statuses", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	e := &env{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	visit(newRootCommand(e))
}
