package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/follow"
	"github.com/dlgt-dev/dlgt/internal/render"
	"github.com/dlgt-dev/dlgt/rpc"
)

func newSessionListCommand(e *Env) *cobra.Command {
	var all, watch bool
	var hosts []string
	cmd := &cobra.Command{
		Use:   "list [--all]",
		Short: "List Sessions (terminal ones too with --all)",
		Long: `List Sessions (session.list): one JSON line by default; -o text prints an
aligned table (alias or id, state, harness, title, and how long ago each was
created and last changed).

--watch shows that table live, with each Session's last result, redrawn on
every event (event.subscribe) until Ctrl-C (exit status 130); on a terminal
it uses the alternate screen and restores the terminal on exit.

--hosts a,b lists the Sessions of several machines (each through ssh, as
--host does; "local" is this one): every Session carries a "host" member
(the table a HOST column), and a host that cannot be reached is reported
in "errors" without hiding the others (exit status 1).`,
		Example: `  dlgt session list --all --pretty
  dlgt session list --hosts local,devbox,build@ci-host:2222 -o text
  dlgt session list -o text
  dlgt session list --watch`,
		Args: JSONArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := TextOutput(cmd)
			if err != nil {
				return PrintFailure(cmd, err)
			}
			if len(hosts) > 0 {
				if watch {
					return PrintFailure(cmd, Usagef("--watch follows one daemon; it does not combine with --hosts"))
				}
				return e.listHosts(cmd, hosts, all, text)
			}
			if watch {
				return e.watchSessions(cmd, all)
			}
			return callAndPrint(e, cmd, (*client.Client).SessionList, rpc.SessionListParams{All: all}, func(w io.Writer, res rpc.SessionListResult) error {
				return render.SessionTable(w, res.Sessions, time.Now(), nil, e.tableWidth(w))
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include stopped and failed Sessions")
	cmd.Flags().BoolVar(&watch, "watch", false, "a live table of the Sessions, redrawn on events, until Ctrl-C")
	cmd.Flags().StringSliceVar(&hosts, "hosts", nil, "list the Sessions of several machines: comma-separated [user@]host[:port], \"local\" for this one")
	AddPretty(cmd)
	AddOutputFlag(cmd)
	return cmd
}

// listHosts is session list --hosts: each host asked in turn (concurrently),
// its Sessions tagged with the host, unreachable hosts listed as errors.
func (e *Env) listHosts(cmd *cobra.Command, hosts []string, all, text bool) error {
	type hostErr struct {
		Host  string     `json:"host"`
		Error *rpc.Error `json:"error"`
	}
	// The hosts are named: DLGT_HOST plays no part.
	e.localOnly = true
	c, err := e.Client()
	if err != nil {
		return PrintFailure(cmd, err)
	}
	answers, err := c.SessionLists(cmd.Context(), hosts, rpc.SessionListParams{All: all})
	if err != nil {
		return PrintFailure(cmd, err)
	}
	sessions := []json.RawMessage{}
	var errs []hostErr
	var rows []rpc.Session
	var rowHosts []string
	for _, a := range answers {
		if a.Err != nil {
			errs = append(errs, hostErr{a.Host, a.Err})
		}
		for _, s := range a.Tagged() {
			var rs rpc.Session
			json.Unmarshal(s, &rs)
			sessions, rows, rowHosts = append(sessions, s), append(rows, rs), append(rowHosts, a.Host)
		}
	}
	if !text {
		return PrintDoc(cmd, len(errs) == 0, struct {
			Sessions []json.RawMessage `json:"sessions"`
			Errors   []hostErr         `json:"errors,omitempty"`
		}{sessions, errs})
	}
	w := cmd.OutOrStdout()
	render.HostSessionTable(w, rows, rowHosts, hosts, time.Now(), e.tableWidth(w))
	for _, he := range errs {
		fmt.Fprintf(cmd.ErrOrStderr(), "dlgt: %s: %s: %s\n", he.Host, he.Error.Code, he.Error.Message)
	}
	if len(errs) > 0 {
		return ExitStatus{ExitError}
	}
	return nil
}

// watchSessions is session list --watch (follow.Watch).
func (e *Env) watchSessions(cmd *cobra.Command, all bool) error {
	c, err := e.Client()
	if err != nil {
		return PrintFailure(cmd, err)
	}
	out := cmd.OutOrStdout()
	err = follow.Watch(cmd.Context(), c, out, follow.WatchOptions{All: all, TTY: e.Terminal(out), Width: func() int { return e.tableWidth(out) }})
	var he *follow.HandleError
	if errors.As(err, &he) {
		return he.Err
	}
	if err != nil {
		return PrintFailure(cmd, err)
	}
	return nil
}
