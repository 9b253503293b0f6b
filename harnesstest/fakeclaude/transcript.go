package fakeclaude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"
	"unicode/utf8"
)

// transcriptPath is where Claude Code keeps a session's transcript:
// ~/.claude/projects/<cwd with every non-alphanumeric character as ->/<id>.jsonl.
// ("/home/user/project" -> "-home-user-project").
func transcriptPath(home, cwd, id string) string {
	return filepath.Join(home, ".claude", "projects", projectDirRE.ReplaceAllString(cwd, "-"), id+".jsonl")
}

var projectDirRE = regexp.MustCompile(`[^a-zA-Z0-9]`)

// mockChunk is mockapi.DefaultChunk, the runes per streamed delta.
const mockChunk = 16

// transcript appends conversation entries, one JSON object per line, in a
// simplified form of Claude's own transcript. The file is created with the
// first entry, as the real CLI does.
type transcript struct {
	mu        sync.Mutex
	path      string
	sessionID string
	cwd       string
	model     string
	lastUUID  string // parentUuid chain
	muted     bool   // entries are dropped ([[notranscript]])
}

// mute has the entries that follow dropped (on) or written (off).
func (t *transcript) mute(on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.muted = on
}

// historyEntry is one exchange read back on --resume.
type historyEntry struct {
	role string // "user" or "assistant"
	text string
	at   time.Time
}

// load reads an existing transcript for --resume.
func (t *transcript) load() ([]historyEntry, error) {
	f, err := os.Open(t.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []historyEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var e struct {
			Type      string    `json:"type"`
			UUID      string    `json:"uuid"`
			Timestamp time.Time `json:"timestamp"`
			Message   struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.UUID != "" {
			t.lastUUID = e.UUID
		}
		if e.Type != "user" && e.Type != "assistant" {
			continue
		}
		text := contentText(e.Message.Content)
		if text == "" {
			continue // a tool call or its result: no text to replay
		}
		out = append(out, historyEntry{role: e.Type, text: text, at: e.Timestamp})
	}
	return out, sc.Err()
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
	json.Unmarshal(raw, &blocks)
	var text string
	for _, b := range blocks {
		if b.Type == "text" {
			text += b.Text
		}
	}
	return text
}

// user records a user message; content is a string for prompts and a
// block list for synthetic messages (interruptions), as in Claude's files.
func (t *transcript) user(content any, promptID string) error {
	e := t.entry("user").with("message", obj{{"role", "user"}, {"content", content}})
	if promptID != "" {
		e = e.with("promptId", promptID)
	}
	return t.append(e)
}

// assistant records an assistant text message with the usage Claude Code
// writes for it: mockapi's figures for a streamed reply (input_tokens 10,
// output_tokens one per 16-rune delta plus one). An API error is a message
// Claude Code makes up itself: model "<synthetic>", all figures zero.
func (t *transcript) assistant(text string, apiError bool) error {
	return t.assistantStop(text, apiError, "end_turn")
}

// assistantStop is assistant with the message's stop_reason.
func (t *transcript) assistantStop(text string, apiError bool, stop string) error {
	model, in, out := t.model, 10, (utf8.RuneCountInString(text)+mockChunk-1)/mockChunk+1
	if apiError {
		model, in, out = "<synthetic>", 0, 0
	}
	msg := obj{
		{"id", "msg_" + randHex(12)},
		{"type", "message"},
		{"role", "assistant"},
		{"model", model},
		{"content", []obj{{{"type", "text"}, {"text", text}}}},
		{"stop_reason", stop},
		{"stop_sequence", nil},
		{"usage", obj{
			{"input_tokens", in},
			{"cache_creation_input_tokens", 0},
			{"cache_read_input_tokens", 0},
			{"output_tokens", out},
			{"output_tokens_details", obj{{"thinking_tokens", 0}}},
			{"service_tier", "standard"},
		}},
	}
	e := t.entry("assistant").with("message", msg)
	if apiError {
		e = e.with("isApiErrorMessage", true)
	}
	return t.append(e)
}

// toolUse records the assistant message calling the Bash tool with input
// (tool_use id), with the usage mockapi charges for streaming that input:
// input_tokens 10, one output token per 16-rune delta of its JSON plus
// one, and stop_reason tool_use (another request follows).
func (t *transcript) toolUse(id string, input obj) error {
	js, err := marshal(input)
	if err != nil {
		return err
	}
	out := (utf8.RuneCount(bytes.TrimSpace(js))+mockChunk-1)/mockChunk + 1
	msg := obj{
		{"id", "msg_" + randHex(12)},
		{"type", "message"},
		{"role", "assistant"},
		{"model", t.model},
		{"content", []obj{{{"type", "tool_use"}, {"id", id}, {"name", "Bash"}, {"input", input}}}},
		{"stop_reason", "tool_use"},
		{"stop_sequence", nil},
		{"usage", obj{
			{"input_tokens", 10},
			{"cache_creation_input_tokens", 0},
			{"cache_read_input_tokens", 0},
			{"output_tokens", out},
			{"output_tokens_details", obj{{"thinking_tokens", 0}}},
			{"service_tier", "standard"},
		}},
	}
	return t.append(t.entry("assistant").with("message", msg))
}

// toolResult records a tool's result as Claude Code does: a user line
// carrying the turn's promptId.
func (t *transcript) toolResult(id, content string, isError bool, promptID string, steers ...string) error {
	blocks := []obj{{{"tool_use_id", id}, {"type", "tool_result"}, {"content", content}, {"is_error", isError}}}
	for _, s := range steers {
		// Claude Code 2.1.332 carries text submitted during a tool call
		// in the tool result's own user message, as a text block.
		blocks = append(blocks, obj{{"type", "text"}, {"text", SteerPrefix + s}})
	}
	e := t.entry("user").with("message", obj{{"role", "user"}, {"content", blocks}})
	if promptID != "" {
		e = e.with("promptId", promptID)
	}
	return t.append(e)
}

// SteerPrefix opens the text block that carries a steer in the tool
// result's user message, as Claude Code 2.1.332 words it.
const SteerPrefix = "The user sent a new message while you were working:\n"

func (t *transcript) entry(typ string) obj {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parent any
	if t.lastUUID != "" {
		parent = t.lastUUID
	}
	id := newUUID()
	t.lastUUID = id
	return obj{
		{"parentUuid", parent},
		{"isSidechain", false},
		{"userType", "external"},
		{"cwd", t.cwd},
		{"sessionId", t.sessionID},
		{"version", version},
		{"type", typ},
		{"uuid", id},
		{"timestamp", time.Now().UTC().Format("2006-01-02T15:04:05.000Z")},
	}
}

func (t *transcript) append(e obj) error {
	line, err := marshal(e)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.muted {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(t.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	return errors.Join(err, f.Close())
}
