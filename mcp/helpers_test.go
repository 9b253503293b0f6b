package mcp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dlgt-dev/dlgt/client"
	"github.com/dlgt-dev/dlgt/harnesstest/testkit"
)

// The test binary doubles as the remote side of an ssh connection
// (testkit.Main's relay role).
func TestMain(m *testing.M) { testkit.Main(m) }

// relaySSH is a DLGT_SSH_COMMAND whose every host is the fake daemon d.
func relaySSH(t *testing.T, d *testkit.FakeDaemon) (cmd, argsFile string) {
	return testkit.RelaySSH(t, d)
}

// testClient is a Client of the fake daemon d (its socket pinned, no
// autostart, no profiles unless vars name a file) with the client
// environment environ.
func testClient(t *testing.T, d *testkit.FakeDaemon, vars map[string]string, environ []string) *client.Client {
	t.Helper()
	all := map[string]string{"DLGT_HOME": t.TempDir(), "DLGT_NO_AUTOSTART": "1", "DLGT_SOCKET": d.Socket,
		"DLGT_PROFILES": filepath.Join(t.TempDir(), "none.toml")}
	for k, v := range vars {
		all[k] = v
	}
	c, err := client.New(client.Options{Getenv: func(k string) string { return all[k] }, Environ: func() []string { return environ }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testServer connects an MCP client to the server of a testClient.
func testServer(t *testing.T, d *testkit.FakeDaemon, vars map[string]string, environ []string, waitMax time.Duration) *sdk.ClientSession {
	t.Helper()
	return connect(t, NewServer(testClient(t, d, vars, environ), Options{WaitMax: waitMax}))
}

// connect runs s on in-memory transports and returns the client's end.
func connect(t *testing.T, s *sdk.Server) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, st)
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

// callTool calls name with args and returns the result's first text block
// and the JSON document of its second. No structuredContent may be set: the
// CLIs would show it to the model in place of the text.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any) (string, map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if res.StructuredContent != nil {
		t.Errorf("%s: structuredContent is set: %v", name, res.StructuredContent)
	}
	if len(res.Content) == 1 && res.IsError {
		// The SDK's own refusal of arguments that break the input schema
		// (a wrong type) carries no document.
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			return tc.Text, nil, true
		}
	}
	if len(res.Content) != 2 {
		t.Fatalf("%s: %d content blocks, want text and JSON", name, len(res.Content))
	}
	text, ok1 := res.Content[0].(*sdk.TextContent)
	doc, ok2 := res.Content[1].(*sdk.TextContent)
	if !ok1 || !ok2 {
		t.Fatalf("%s: content blocks %T %T, want two text blocks", name, res.Content[0], res.Content[1])
	}
	var structured map[string]any
	if err := json.Unmarshal([]byte(doc.Text), &structured); err != nil {
		t.Fatalf("%s: second block is not a JSON object: %v\n%s", name, err, doc.Text)
	}
	return text.Text, structured, res.IsError
}

func strp(s string) *string { return &s }
func boolp(b bool) *bool    { return &b }
