// Package transcript reads a Session's provider transcript for the
// daemon: the room for "change how a turn's reply, usage or lifecycle
// lines are taken from the file a harness keeps".
//
// Every read opens the file through one opener (Open), which bounds what
// is read to MaxScan bytes from an offset (where the transcript stood
// when the execution started) and says what a file now shorter than that
// offset (replaced) gives. The formats are the harness adapters'
// (harness.ReplyReader, harness.UsageSource, harness.TranscriptSource):
// this package parses nothing itself.
//
// At a turn's end, Await is the one bounded wait on the transcript: one
// deadline, one poll loop, returning as soon as the reply (when the hook
// carried none) and the turn's usage record (when the turn is shown
// being written) are there. WatchFor watches the file for a steer's
// text: the harness took it once its own record holds it. A Tail reads
// the complete lines appended to it, for the daemon to map to lifecycle
// evidence (harness.TranscriptSource), bounding a line to MaxLine.
//
// It sees no Session, no lock and no runtime: the daemon hands it paths,
// offsets, the adapter and a prompt or turn id, and applies what it
// returns. Its tests use files in a temporary directory and a fake clock,
// no daemon.
package transcript
