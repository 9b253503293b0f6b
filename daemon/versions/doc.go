// Package versions is the installed harness versions for harness.list:
// the room for "change how and how often a harness binary's version is
// learned".
//
// A Cache runs `bin --version` (harness.ProbeVersion) once per binary and
// again only after the binary was replaced (its size or modification
// time changed); a failed probe is remembered too, except one cut by its
// Timeout, which a loaded machine is no verdict on. It holds at most 64
// binaries. Its tests run scripts standing in for binaries, no daemon.
package versions
