package acp

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
)

// The daemon keeps no turn's prompt, so `dlgt acp` keeps the prompts it
// sends itself, one file per Session under the client's state directory
// ($DLGT_HOME/acp/), for session/load to replay them as
// user_message_chunk. Turns sent by other clients have no entry.

// maxJournalBytes bounds one Session's journal: past it, the file is
// rewritten with its newer half.
const maxJournalBytes = 4 << 20

// journalMu serializes this process's writes (another process's appends
// are whole lines, O_APPEND).
var journalMu sync.Mutex

type journalEntry struct {
	Seq    uint64 `json:"execution_seq"`
	Prompt string `json:"prompt"`
}

// journalPath is the journal of the Session id in dir ("" when there is
// no directory).
func journalPath(dir, id string) string {
	if dir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(dir, hex.EncodeToString(sum[:12])+".jsonl")
}

// record appends the prompt of execution seq to the Session's journal.
// It is best effort: a journal that cannot be written loses the replay
// of that prompt, nothing else.
func record(dir, id string, seq uint64, prompt string) error {
	path := journalPath(dir, id)
	if path == "" {
		return nil
	}
	line, err := json.Marshal(journalEntry{Seq: seq, Prompt: prompt})
	if err != nil {
		return err
	}
	journalMu.Lock()
	defer journalMu.Unlock()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && fi.Size()+int64(len(line)) > maxJournalBytes {
		if err := trimJournal(path); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

// trimJournal keeps the newer half of the journal's lines.
func trimJournal(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	half := data[len(data)/2:]
	if i := bytes.IndexByte(half, '\n'); i >= 0 {
		half = half[i+1:]
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, half, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// prompts reads the Session's journal: prompt by execution.
func prompts(dir, id string) map[uint64]string {
	out := map[uint64]string{}
	path := journalPath(dir, id)
	if path == "" {
		return out
	}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxJournalBytes)
	for sc.Scan() {
		var e journalEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out[e.Seq] = e.Prompt
		}
	}
	return out
}
