package testkit

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harnesstest/fakeclaude"
	"github.com/dlgt-dev/dlgt/hookfwd"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/statedir"
)

// RoleEnv selects the role of a test binary started as a child process.
const RoleEnv = "DLGT_TEST_ROLE"

// Main is a test binary's TestMain: with DLGT_TEST_ROLE set it plays
// that role and exits; otherwise it runs the tests, then after (each in
// turn), and exits with the tests' status. The roles:
//
//   - claude: the fake Claude Code (fakeclaude.Main).
//   - hook: the production hook forwarder, as the daemon runs it
//     (--socket S --launch L EVENT; hookfwd.Main).
//   - daemon: `dlgt daemon` as an autostart runs it: the paths from the
//     environment, until stopped or 2 minutes have passed. It refuses
//     DLGT_HOST, which an autostart must not pass on.
//   - relay: the remote end of an ssh connection (RelaySSH): it greets as
//     `dlgt rpc --stdio --remote` does and relays to DLGT_RELAY_SOCKET,
//     recording its arguments in DLGT_RELAY_ARGS.
func Main(m *testing.M, after ...func()) {
	switch os.Getenv(RoleEnv) {
	case "claude":
		os.Exit(fakeclaude.Main(os.Args[1:]))
	case "hook":
		os.Exit(hookfwd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	case "daemon":
		os.Exit(daemonMain(os.Args[1:]))
	case "relay":
		os.Exit(relayMain())
	}
	code := m.Run()
	for _, f := range after {
		f()
	}
	os.Exit(code)
}

func daemonMain(args []string) int {
	if len(args) != 1 || args[0] != "daemon" {
		fmt.Fprintln(os.Stderr, "want: daemon")
		return 2
	}
	if h := os.Getenv("DLGT_HOST"); h != "" {
		fmt.Fprintln(os.Stderr, "the daemon was started with DLGT_HOST", h)
		return 1
	}
	p, err := statedir.ResolvePaths(os.Getenv, statedir.Version)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := RunDaemon(ctx, p, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func relayMain() int {
	os.WriteFile(os.Getenv("DLGT_RELAY_ARGS"), []byte(strings.Join(os.Args[1:], "\n")+"\n"), 0o600)
	c, err := net.Dial("unix", os.Getenv("DLGT_RELAY_SOCKET"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	os.Stdout.Write(client.HelloLine(rpc.SchemaVersion))
	go func() { io.Copy(c, os.Stdin); c.(*net.UnixConn).CloseWrite() }()
	io.Copy(os.Stdout, c)
	return 0
}
