package harness

// Reading a turn's reply back from a provider transcript, for a turn end
// whose hook carries no final text. Claude Code's transcript, Codex's
// rollout, Gemini CLI's session file and GitHub Copilot CLI's session log
// are JSONL. The daemon reads the transcript from where it stood when the
// turn started, and waits (bounded) for the turn's record to land, since a
// harness may write it after its turn-end hook (Copilot does).

import (
	"encoding/json"
	"io"
	"os"
	"strings"
)

// ReplyReader is implemented by a harness whose transcript can be read
// back for a turn's final text. LastReply reads r, the transcript from
// where it stood when the turn started (or from its beginning when that is
// unknown), and returns the turn's reply: the last assistant message after
// the last user message matching prompt. ok is false while the transcript
// holds no reply of that turn (a previous turn's reply is never taken).
type ReplyReader interface {
	LastReply(r io.Reader, prompt string) (string, bool)
}

// LastReply implements ReplyReader.
func (Claude) LastReply(r io.Reader, prompt string) (string, bool) { return lastReplyJSONL(r, prompt) }

// LastReply implements ReplyReader (rollout lines are response_items).
func (Codex) LastReply(r io.Reader, prompt string) (string, bool) { return lastReplyJSONL(r, prompt) }

// maxReplyScan bounds the read of a transcript for a reply.
const maxReplyScan = 32 << 20

// PromptMatches compares the provider's echo of a prompt with what dlgt
// pasted; TUIs may normalize line endings and trailing whitespace.
func PromptMatches(got, want string) bool {
	norm := func(s string) string {
		return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
	}
	return norm(got) == norm(want) || strings.ReplaceAll(norm(got), "\r", "\n") == norm(want)
}

// lastReplyJSONL scans a JSONL transcript for the last assistant
// text after the last user entry carrying prompt (this execution's
// boundary).
func lastReplyJSONL(r io.Reader, prompt string) (string, bool) {
	dec := json.NewDecoder(&limitedReader{r: r, n: maxReplyScan})
	inTurn, text, found := false, "", false
	for {
		var entry struct {
			Type    string `json:"type"`
			Message struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"message"`
			// Codex rollout lines: {"type":"response_item","payload":{"type":"message",...}}.
			Payload struct {
				Type    string          `json:"type"`
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"payload"`
		}
		if err := dec.Decode(&entry); err != nil {
			break
		}
		if entry.Type == "response_item" && entry.Payload.Type == "message" {
			entry.Type, entry.Message.Role, entry.Message.Content = "", entry.Payload.Role, entry.Payload.Content
		}
		content := contentText(entry.Message.Content)
		switch {
		case entry.Type == "user" || entry.Message.Role == "user":
			if PromptMatches(content, prompt) {
				inTurn, text, found = true, "", false
			}
		case inTurn && (entry.Type == "assistant" || entry.Message.Role == "assistant") && content != "":
			text, found = content, true
		}
	}
	return text, found
}

// contentText flattens a message content (a string or text blocks).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" || b.Type == "input_text" || b.Type == "output_text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, os.ErrClosed
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
