package mcp

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/dlgt-dev/dlgt/client"
)

// warmTimeout bounds the session.warm calls of a server's start.
const warmTimeout = 30 * time.Second

// WarmProfiles asks the daemon for the warm spares of every profile that
// keeps some (Profile.Warm) and runs on this machine, in this server's
// directory and environment: the launch a delegate naming the profile
// makes, so that delegate finds its harness already started. A failure
// is written to errOut (the server's stderr) and changes nothing else.
// It returns how many profiles it warmed.
func WarmProfiles(ctx context.Context, c *client.Client, errOut io.Writer) int {
	profiles, err := c.LoadProfiles()
	if err != nil {
		fmt.Fprintf(errOut, "dlgt mcp: warm spares: %v\n", err)
		return 0
	}
	names := make([]string, 0, len(profiles))
	for name, p := range profiles {
		if p.Warm > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	warmed := 0
	for _, name := range names {
		l, err := c.ResolveLaunch(client.LaunchSpec{Profile: name})
		if err != nil {
			fmt.Fprintf(errOut, "dlgt mcp: warm spares of profile %s: %v\n", name, err)
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, warmTimeout)
		_, ok, err := c.KeepWarm(wctx, l)
		cancel()
		if err != nil {
			fmt.Fprintf(errOut, "dlgt mcp: warm spares of profile %s: %v\n", name, err)
		}
		if ok {
			warmed++
		}
	}
	return warmed
}
