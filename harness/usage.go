package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"

	"github.com/dlgt-dev/dlgt/rpc"
)

// UsageSource is implemented by harnesses whose transcript records what
// each model request cost. The daemon calls TurnUsage when an execution
// ends, with the transcript read from where it stood when the execution
// started.
type UsageSource interface {
	// TurnUsage sums the token usage r records for the turn turnID (the
	// provider's id for it, from its hooks; empty when none was seen, and
	// then the first turn r holds is taken). The usage is nil when r
	// records none for that turn. state is how far r has recorded the
	// turn: Claude Code may run its Stop hook before it has written the
	// final message, and the daemon waits (briefly) only for a turn that
	// is TurnOpen.
	TurnUsage(r io.Reader, turnID string) (u *rpc.Usage, state TurnState)
}

// StopReasonSource is a UsageSource whose transcript also records why
// the turn's model stopped. TurnEnd is TurnUsage with that reason:
// rpc.StopMaxTokens or rpc.StopRefusal when the turn's last model
// response says so, "" for a normal end or when nothing says.
type StopReasonSource interface {
	UsageSource
	TurnEnd(r io.Reader, turnID string) (u *rpc.Usage, state TurnState, stopReason string)
}

// TurnState is how far a transcript has recorded one turn.
type TurnState int

const (
	// TurnUnseen: nothing of the turn is there (no transcript kept, a
	// format this adapter does not read, a turn that wrote nothing).
	TurnUnseen TurnState = iota
	// TurnOpen: the turn is being written and has not ended: its prompt
	// is there, its last model response is not.
	TurnOpen
	// TurnEnded: the turn's last model response is there.
	TurnEnded
)

func (s TurnState) String() string {
	switch s {
	case TurnUnseen:
		return "unseen"
	case TurnOpen:
		return "open"
	case TurnEnded:
		return "ended"
	}
	return "TurnState(" + strconv.Itoa(int(s)) + ")"
}

// maxUsageLine bounds one transcript line read for usage; a longer line
// (a large tool result) is skipped: usage lines are small.
const maxUsageLine = 8 << 20

// eachLine calls fn with every complete line of r no longer than max.
func eachLine(r io.Reader, max int, fn func(line []byte)) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	skip := false
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if !skip {
				long = append(long, chunk...)
				if len(long) > max {
					long, skip = nil, true
				}
			}
			continue
		case err != nil:
			return // EOF: a partial last line is still being written
		}
		line := chunk[:len(chunk)-1]
		if long != nil {
			line = append(long, line...)
		}
		if !skip && len(line) <= max && len(bytes.TrimSpace(line)) > 0 {
			fn(line)
		}
		long, skip = nil, false
	}
}

// usageSum accumulates per-request figures, saturating instead of
// overflowing on absurd input.
type usageSum struct {
	u rpc.Usage
}

func addSat(a, b int64) int64 {
	if b < 0 {
		b = 0
	}
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// add records one request: input not cached, cache read, cache write,
// output, and the reasoning part of output.
func (s *usageSum) add(input, cacheRead, cacheWrite, output, reasoning int64) {
	s.u.InputTokens = addSat(s.u.InputTokens, input)
	s.u.CacheReadInputTokens = addSat(s.u.CacheReadInputTokens, cacheRead)
	s.u.CacheCreationInputTokens = addSat(s.u.CacheCreationInputTokens, cacheWrite)
	s.u.OutputTokens = addSat(s.u.OutputTokens, output)
	s.u.ReasoningOutputTokens = addSat(s.u.ReasoningOutputTokens, reasoning)
	s.u.Requests = addSat(s.u.Requests, 1)
}

func (s *usageSum) result() *rpc.Usage {
	if s.u.Requests == 0 {
		return nil
	}
	u := s.u
	u.TotalTokens = addSat(addSat(addSat(u.InputTokens, u.CacheReadInputTokens), u.CacheCreationInputTokens), u.OutputTokens)
	return &u
}

// ---- Claude Code ----------------------------------------------------------

// claudeUsageLine is the part of a Claude Code transcript line read for
// usage. User lines carry the turn's promptId (the UserPromptSubmit
// hook's prompt_id), the prompt's and its tool results' alike; assistant
// lines do not, and belong to the turn of the user line before them.
type claudeUsageLine struct {
	Type              string `json:"type"`
	PromptID          string `json:"promptId"`
	UUID              string `json:"uuid"`
	IsAPIErrorMessage bool   `json:"isApiErrorMessage"`
	Message           struct {
		ID         string           `json:"id"`
		Model      string           `json:"model"`
		StopReason *string          `json:"stop_reason"`
		Usage      *claudeUsageData `json:"usage"`
	} `json:"message"`
}

type claudeUsageData struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	OutputTokensDetails      struct {
		ThinkingTokens int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// TurnUsage sums Claude Code's per-message usage over the assistant lines
// of turnID. Claude Code writes one line per content block of an API
// message, each repeating the message's id and usage (the last one
// final): a message is counted once, with the largest figures its lines
// give. Messages Claude Code made up itself (API errors, model
// "<synthetic>") cost nothing and are not counted. The turn's last
// response is recorded once a message of the turn has a stop_reason other
// than tool_use (a tool call is followed by another request), or Claude
// Code wrote an error message for it. The turn is open from the first
// user line carrying its promptId (the prompt, or a tool result) until
// then.
func (Claude) TurnUsage(r io.Reader, turnID string) (*rpc.Usage, TurnState) {
	u, st, _ := claudeTurn(r, turnID)
	return u, st
}

// TurnEnd implements StopReasonSource: TurnUsage, and the stop_reason of
// the turn's last model message when it is max_tokens or refusal. Claude
// Code 2.1.332 answers a message cut at the token limit by asking the
// model to go on (a meta user line of the same promptId), up to three
// times, then writes its own API error message (stop_reason
// stop_sequence); a refused message is retried once, then it writes its
// own error message (stop_reason refusal). The last message the model
// wrote says why the turn stopped: a continuation that ended normally
// leaves no reason, its own error messages change none, except a refusal
// it wrote itself.
func (Claude) TurnEnd(r io.Reader, turnID string) (*rpc.Usage, TurnState, string) {
	return claudeTurn(r, turnID)
}

// claudeStop is a Messages API stop_reason as a result's stop_reason:
// only max_tokens and refusal say more than a normal end.
func claudeStop(sr string) string {
	switch sr {
	case "max_tokens":
		return rpc.StopMaxTokens
	case "refusal":
		return rpc.StopRefusal
	}
	return ""
}

// claudeTurn reads turnID's usage, state and stop reason.
func claudeTurn(r io.Reader, turnID string) (*rpc.Usage, TurnState, string) {
	var (
		stop     string
		current  string // promptId of the turn the next assistant line belongs to
		order    []string
		byID     = map[string]*claudeUsageData{}
		seen     bool // a user line of the turn
		recorded bool
	)
	eachLine(r, maxUsageLine, func(line []byte) {
		if !bytes.Contains(line, []byte(`"type":"user"`)) && !bytes.Contains(line, []byte(`"type":"assistant"`)) {
			return
		}
		var l claudeUsageLine
		if json.Unmarshal(line, &l) != nil {
			return
		}
		switch l.Type {
		case "user":
			if l.PromptID != "" {
				current = l.PromptID
				if turnID == "" {
					turnID = current
				}
				seen = seen || current == turnID
			}
		case "assistant":
			if current == "" || current != turnID {
				return
			}
			u := l.Message.Usage
			if l.IsAPIErrorMessage || l.Message.Model == "<synthetic>" {
				recorded = true
				if sr := l.Message.StopReason; sr != nil && *sr == "refusal" {
					stop = rpc.StopRefusal
				}
				return
			}
			if sr := l.Message.StopReason; sr != nil && *sr != "" {
				stop = claudeStop(*sr)
			}
			if sr := l.Message.StopReason; sr != nil && *sr != "" && *sr != "tool_use" {
				recorded = true
			} else if sr != nil && *sr == "tool_use" {
				recorded = false // another request follows
			}
			if u == nil {
				return
			}
			key := l.Message.ID
			if key == "" {
				key = "line:" + l.UUID
			}
			prev, seen := byID[key]
			if !seen {
				order = append(order, key)
				c := *u
				byID[key] = &c
				return
			}
			prev.InputTokens = max(prev.InputTokens, u.InputTokens)
			prev.CacheCreationInputTokens = max(prev.CacheCreationInputTokens, u.CacheCreationInputTokens)
			prev.CacheReadInputTokens = max(prev.CacheReadInputTokens, u.CacheReadInputTokens)
			prev.OutputTokens = max(prev.OutputTokens, u.OutputTokens)
			prev.OutputTokensDetails.ThinkingTokens = max(prev.OutputTokensDetails.ThinkingTokens, u.OutputTokensDetails.ThinkingTokens)
		}
	})
	var sum usageSum
	for _, k := range order {
		u := byID[k]
		sum.add(u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens, u.OutputTokensDetails.ThinkingTokens)
	}
	state := TurnUnseen
	switch {
	case recorded:
		state = TurnEnded
	case seen:
		state = TurnOpen
	}
	return sum.result(), state, stop
}

// ---- Codex ----------------------------------------------------------------

// codexTokens is Codex's token usage record.
type codexTokens struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
	TotalTokens           int64 `json:"total_tokens"`
}

// add records one Codex response. Codex's input_tokens is all the input,
// cached included (its total_tokens is input + output); the cache read
// and write parts are taken out so InputTokens means what it means for
// Claude.
func (s *usageSum) addCodex(t codexTokens) {
	input := t.InputTokens - max(t.CachedInputTokens, 0) - max(t.CacheWriteInputTokens, 0)
	s.add(max(input, 0), t.CachedInputTokens, t.CacheWriteInputTokens, t.OutputTokens, t.ReasoningOutputTokens)
}

// codexUsageLine is the part of a rollout line read for usage.
type codexUsageLine struct {
	Type    string `json:"type"`
	Payload struct {
		Type       string       `json:"type"`
		TurnID     string       `json:"turn_id"`
		RootTurnID string       `json:"root_turn_id"`
		ResponseID string       `json:"response_id"`
		Usage      *codexTokens `json:"usage"`
		Info       *struct {
			Total *codexTokens `json:"total_token_usage"`
			Last  *codexTokens `json:"last_token_usage"`
		} `json:"info"`
	} `json:"payload"`
}

// TurnUsage sums the turn's model responses from the rollout. codex-cli
// 0.171.0 writes one token_usage_record line per response, with the
// turn's id and the response's id: those are summed, each response once.
// A rollout without them (older releases) falls back to the turn's
// event_msg token_count events between its task_started and
// task_complete: each carries the request's figures (last_token_usage)
// and the thread's running total, and an event repeating the previous
// total (Codex re-emits one on some state changes) adds nothing.
//
// Codex writes a response's record before it runs the Stop hook (its
// hooks hold the turn open, and its task_complete comes after them), so a
// rollout holding anything of the turn is taken as TurnEnded, never
// TurnOpen, and one holding nothing of it as TurnUnseen.
func (Codex) TurnUsage(r io.Reader, turnID string) (*rpc.Usage, TurnState) {
	var (
		records   usageSum
		responses = map[string]bool{}
		events    usageSum
		inTurn    bool
		seen      bool // a record, task_started or task_complete of the turn
		lastTotal *codexTokens
	)
	eachLine(r, maxUsageLine, func(line []byte) {
		if !bytes.Contains(line, []byte(`"token_`)) && !bytes.Contains(line, []byte(`"task_`)) {
			return
		}
		var l codexUsageLine
		if json.Unmarshal(line, &l) != nil {
			return
		}
		p := &l.Payload
		switch {
		case l.Type == "token_usage_record":
			if turnID == "" {
				turnID = p.TurnID
			}
			if p.Usage == nil || turnID == "" || (p.TurnID != turnID && p.RootTurnID != turnID) {
				return
			}
			seen = true
			if p.ResponseID != "" {
				if responses[p.ResponseID] {
					return
				}
				responses[p.ResponseID] = true
			}
			records.addCodex(*p.Usage)
		case l.Type == "event_msg" && p.Type == "task_started":
			if turnID == "" {
				turnID = p.TurnID
			}
			inTurn = p.TurnID != "" && p.TurnID == turnID
			seen = seen || inTurn
		case l.Type == "event_msg" && p.Type == "task_complete":
			if p.TurnID == turnID {
				inTurn = false
				seen = seen || p.TurnID != ""
			}
		case l.Type == "event_msg" && p.Type == "token_count":
			if p.Info == nil || p.Info.Total == nil {
				return
			}
			repeated := lastTotal != nil && *lastTotal == *p.Info.Total
			t := *p.Info.Total
			lastTotal = &t
			if inTurn && !repeated && p.Info.Last != nil {
				events.addCodex(*p.Info.Last)
			}
		}
	})
	state := TurnUnseen
	if seen {
		state = TurnEnded
	}
	if u := records.result(); u != nil {
		return u, state
	}
	return events.result(), state
}
