package transcript

import (
	"io"
	"os"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// MaxScan bounds what one read of a provider transcript takes.
const MaxScan = 32 << 20

// Open opens the transcript at path for reading from offset from, at
// most MaxScan bytes. A file now shorter than from was replaced since:
// with restart it is read from its start (and a read from its start of a
// file longer than MaxScan takes its last MaxScan bytes), else Open
// reports false (the range is gone). The caller closes what it returns.
func Open(path string, from int64, restart bool) (io.ReadCloser, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false
	}
	if fi.Size() < from {
		if !restart {
			f.Close()
			return nil, false
		}
		from = 0
	}
	if restart && from == 0 && fi.Size() > MaxScan {
		from = fi.Size() - MaxScan
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		f.Close()
		return nil, false
	}
	return limited{io.LimitReader(f, MaxScan), f}, true
}

type limited struct {
	io.Reader
	io.Closer
}

// ReadReply reads the reply to prompt from the transcript at path, from
// offset from (from its start when it was replaced since).
func ReadReply(r harness.ReplyReader, path string, from int64, prompt string) (string, bool) {
	f, ok := Open(path, from, true)
	if !ok {
		return "", false
	}
	defer f.Close()
	return r.LastReply(f, prompt)
}

// ReadTurn reads turn's usage from the transcript at path at offset from,
// how far the transcript has recorded the turn, and the turn's stop
// reason where the harness's transcript keeps one
// (harness.StopReasonSource). own: from is where the transcript stood
// when the execution started, so when the range holds nothing of turn,
// the turn it does hold is the execution's (the id was another turn's:
// Claude Code names a prompt taken while its previous turn was ending
// with that turn's prompt_id).
func ReadTurn(src harness.UsageSource, path string, from int64, turn string, own bool) (*rpc.Usage, harness.TurnState, string) {
	u, st, stop := readTurn(src, path, from, turn)
	if st == harness.TurnUnseen && own && turn != "" {
		return readTurn(src, path, from, "")
	}
	return u, st, stop
}

func readTurn(src harness.UsageSource, path string, from int64, turn string) (*rpc.Usage, harness.TurnState, string) {
	f, ok := Open(path, from, false)
	if !ok {
		return nil, harness.TurnUnseen, ""
	}
	defer f.Close()
	if ss, ok := src.(harness.StopReasonSource); ok {
		return ss.TurnEnd(f, turn)
	}
	u, st := src.TurnUsage(f, turn)
	return u, st, ""
}
