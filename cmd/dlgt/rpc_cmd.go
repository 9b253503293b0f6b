package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/internal/cli"
	"github.com/dlgt-dev/dlgt/rpc"
)

// helloSchemaOverride, set at build time (-ldflags -X
// main.helloSchemaOverride=N), makes the hello announce schema N: it is how
// the tests build "an older remote". Empty in every release.
var helloSchemaOverride string

// helloLine is the hello of `dlgt rpc --stdio --remote`.
func helloLine() []byte {
	n := rpc.SchemaVersion
	if v, err := strconv.Atoi(helloSchemaOverride); err == nil {
		n = v
	}
	return client.HelloLine(n)
}

func newRPCCommand(e *env) *cobra.Command {
	var stdio, remote bool
	cmd := &cobra.Command{
		Use:   "rpc --stdio",
		Short: "Proxy the public RPC methods between stdin/stdout and the daemon",
		Long: `Read newline-delimited JSON requests on stdin and write responses on stdout.

Only the 15 public v1 methods pass; anything else is answered with
INVALID_ARGUMENT without reaching the daemon. profile.list is answered by the
proxy from the client-side profiles file. Responses and streamed events are
forwarded byte for byte; blank lines are ignored. Invalid JSON or an
over-long line ends the proxy with exit status 1, once every request read
before it has been answered; nothing after it is forwarded. stdout carries
protocol only; diagnostics go to stderr.

With --remote (what dlgt --host runs over ssh), the first line written is
{"hello":{"schema_version":N,"version":"V"}}, and a session.create,
session.restart or session.send with resume gets this machine's environment
under the entries the request names (and a create without cwd this
machine's working directory): the client on the other machine cannot know
either.`,
		Example: `  printf '%s\n' '{"id":1,"method":"session.list","params":{"all":true}}' | dlgt rpc --stdio`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !stdio {
				return cli.UsageError{Err: errors.New("rpc needs --stdio (the only transport it proxies)")}
			}
			cl, err := e.Client()
			if err != nil {
				return err
			}
			c, err := cl.DialConn(cmd.Context(), "")
			if err != nil {
				return err
			}
			p := &rpc.Proxy{
				In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), Conn: c,
				Local: func(method string, params json.RawMessage) (any, error) {
					return e.ProfileList(params)
				},
			}
			if remote {
				// For a client on another machine (dlgt --host): a hello
				// first, and launches filled from this side.
				if _, err := cmd.OutOrStdout().Write(helloLine()); err != nil {
					return err
				}
				p.Rewrite = client.FillLaunch(e.Environ)
			}
			if err := p.Run(cmd.Context()); err != nil {
				if errors.Is(err, rpc.ErrProxyInput) {
					return cli.ExitStatus{Code: cli.ExitError}
				}
				return fmt.Errorf("rpc proxy: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&stdio, "stdio", false, "proxy over stdin/stdout")
	cmd.Flags().BoolVar(&remote, "remote", false, "serve a client on another machine (what dlgt --host runs over ssh): write a hello line first, and fill a create, restart or send --resume with this machine's environment and working directory")
	return cmd
}
