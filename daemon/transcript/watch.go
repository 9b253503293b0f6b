package transcript

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"time"
)

// A text typed into a running turn (a steer) is watched for in the
// harness's own record of the Session, the file its hooks named (Claude
// Code's transcript, Codex's rollout): once it holds the text after the
// offset where it stood before the typing, the CLI took it. WatchMax
// bounds how long, WatchBytes how much of the file is read, WatchPoll how
// often, and WatchLastLook how long after the turn ended the last look
// comes (the record is written before the turn's end is reported, or
// moments after).
var (
	WatchMax      = 10 * time.Minute
	WatchBytes    = int64(16 << 20)
	WatchPoll     = 250 * time.Millisecond
	WatchLastLook = time.Second
)

// Holds reports whether the file at path holds text, as a JSON string
// holds it, within WatchBytes after offset from.
func Holds(path string, from int64, text string) bool {
	quoted, _ := json.Marshal(text)
	needle := quoted[1 : len(quoted)-1]
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	data, _ := io.ReadAll(io.NewSectionReader(f, from, WatchBytes))
	return bytes.Contains(data, needle)
}

// WatchFor calls seen once the file at path holds text after offset from
// (Holds). It gives up when ended is closed and a last look WatchLastLook
// later finds nothing, when exited is closed, or after WatchMax.
func WatchFor(path string, from int64, text string, ended, exited <-chan struct{}, seen func()) {
	tick := time.NewTicker(WatchPoll)
	defer tick.Stop()
	deadline := time.NewTimer(WatchMax)
	defer deadline.Stop()
	for last := false; ; {
		if Holds(path, from, text) {
			seen()
			return
		}
		if last {
			return
		}
		select {
		case <-tick.C:
		case <-ended:
			time.Sleep(WatchLastLook)
			last = true
		case <-exited:
			return
		case <-deadline.C:
			return
		}
	}
}
