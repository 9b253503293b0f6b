// Document sizing and chunking: the byte budget of a fetch document, the
// JSON size of its parts without rendering them, cutting a final_text or a
// row at a UTF-8 boundary, and fit, which names a workable max_bytes when a
// budget cannot carry one piece of progress.

package fetchdoc

import (
	"errors"
	"unicode/utf8"

	"github.com/dlgt-dev/dlgt/rpc"
)

// errTooSmall: the budget cannot carry the envelope plus one piece of
// progress.
var errTooSmall = errors.New("max_bytes too small for one piece of progress")

// fit runs build at the requested budget. When the budget cannot carry
// one piece of progress it fails with INVALID_ARGUMENT naming a max_bytes
// verified by rendering at it (and at it minus workableSlack).
func Fit[T any](fr *Req, build func(*Req) (T, error)) (T, error) {
	d, err := build(fr)
	if !errors.Is(err, errTooSmall) {
		return d, err
	}
	var zero T
	ok := func(c int) bool {
		if c < 1 || c > HardBytes {
			return false
		}
		f := *fr
		f.MaxBytes, f.Budget = c, c-CLIWrapper
		_, err := build(&f)
		return err == nil
	}
	works := func(c int) bool { return ok(c) && (c-workableSlack <= fr.MaxBytes || ok(c-workableSlack)) }
	hi := 0
	for c := fr.MaxBytes; c < HardBytes; {
		c = min(HardBytes, c+max(256, c/2))
		if works(c) {
			hi = c
			break
		}
	}
	if hi == 0 {
		return zero, rpc.InvalidField("max_bytes", "no max_bytes up to %d can carry this response", HardBytes)
	}
	for lo := fr.MaxBytes; lo+1 < hi; {
		mid := lo + (hi-lo)/2
		if works(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	// The named value must itself have been rendered, with its slack.
	if !ok(hi) || !ok(hi-workableSlack) {
		hi = min(HardBytes, hi+workableSlack)
	}
	return zero, &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "max_bytes", WorkableMaxBytes: hi,
		Message: "max_bytes " + rpc.FormatPosition(uint64(fr.MaxBytes)) + " is too small for this response's envelope plus one chunk; " + rpc.FormatPosition(uint64(hi)) + " works"}
}

func JSONLen(v any) int {
	b, _ := rpc.Marshal(v)
	return len(b)
}

// jsonStrLen is jsonLen(s) without rendering: the wire encoding escapes
// '"', '\\' and control bytes, U+2028/U+2029, and replaces invalid UTF-8
// with \ufffd (HTML characters are not escaped).
func JSONStrLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\':
				n += 2
			case b >= 0x20:
				n++
			case b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1, c == '\u2028', c == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// chunkSizer returns jsonLen(withChunk(r, t, off, c)) as a function of
// (t, c), rendering the result only once per c.
func ChunkSizer(r rpc.Result, off int) func(string, bool) int {
	var fixed [2]int
	empty := ""
	return func(t string, c bool) int {
		if t == "" && r.FinalText == nil {
			return JSONLen(WithChunk(r, t, off, c)) // final_text stays null
		}
		i := BoolInt(c)
		if fixed[i] == 0 {
			r2 := r
			r2.FinalText = &empty
			fixed[i] = JSONLen(WithChunk(r2, "", off, c)) - len(`""`)
		}
		return fixed[i] + JSONStrLen(t)
	}
}

// worstSize is the size of a document of env with the longest reason and
// cursor.
func worstSize(env rpc.Runtime, gaps []rpc.Gap, buckets []rpc.FetchSession) int {
	return JSONLen(newDocument(env, rpc.ReasonPageFull, true, gaps, ^uint64(0), buckets))
}

// minChunk is the room one piece of progress needs: a fragment with a
// few bytes of text.
const minChunk = 96

func BoolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// withChunk renders result r carrying text[off:] piece.
func WithChunk(r rpc.Result, piece string, off int, complete bool) rpc.Result {
	if r.FinalText != nil || piece != "" {
		p := piece
		r.FinalText = &p
	}
	o, c := off, complete
	r.FinalTextOffset, r.FinalTextComplete = &o, &c
	return r
}

// fitText returns the longest prefix of text (cut at a UTF-8 boundary)
// whose rendering fits room. whole says whether text runs to the end of
// its value (so a full fit is complete).
func fitText(text string, whole bool, size func(string, bool) int, room int) (string, bool, bool) {
	if size(text, whole) <= room {
		return text, whole, true
	}
	lo, hi := 0, len(text)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		cut := mid
		for cut > 0 && cut < len(text) && !utf8.RuneStart(text[cut]) {
			cut--
		}
		if size(text[:cut], false) <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for lo > 0 && lo < len(text) && !utf8.RuneStart(text[lo]) {
		lo--
	}
	if lo == 0 {
		return "", false, false
	}
	return text[:lo], false, true
}

// fitChunk is fitText for the chunk of result res at off, carrying the
// result's prompt (an extension) on its first chunk only: whole when its
// JSON takes at most half of room, else cut at a UTF-8 boundary and
// flagged prompt_truncated; when the chunk does not fit with any of it,
// without it, so the prompt never makes a budget unworkable. The
// result's tool_calls (an extension) come only when tools is set, on the
// first chunk, as many of the first calls as take at most a quarter of
// room (flagged tool_calls_truncated when some are left out), and are
// left out as the prompt is when the chunk does not fit with them.
func fitChunk(res rpc.Result, text string, whole bool, off, room int, tools bool) (rpc.Result, string, bool, bool) {
	r := res
	r.PromptTruncated = false
	if r.Prompt != nil && off > 0 {
		r.Prompt = nil
	}
	if !tools || off > 0 {
		r.ToolCalls, r.ToolCallsTruncated = nil, false
	} else {
		r.ToolCalls, r.ToolCallsTruncated = fitCalls(r.ToolCalls, r.ToolCallsTruncated, room/4)
	}
	if r.Prompt != nil && JSONStrLen(*r.Prompt) > room/2 {
		cut, _, _ := fitText(*r.Prompt, true, func(t string, _ bool) int { return JSONStrLen(t) }, room/2)
		r.Prompt, r.PromptTruncated = &cut, true
	}
	piece, complete, ok := fitText(text, whole, ChunkSizer(r, off), room)
	if !ok && (r.Prompt != nil || r.ToolCalls != nil) {
		r.Prompt, r.PromptTruncated = nil, false
		r.ToolCalls, r.ToolCallsTruncated = nil, len(res.ToolCalls) > 0 && tools && off == 0
		piece, complete, ok = fitText(text, whole, ChunkSizer(r, off), room)
	}
	return r, piece, complete, ok
}

// fitCalls is the first of calls whose JSON array (with the
// tool_calls_truncated flag) takes at most room bytes, and whether any
// of the turn's calls is left out.
func fitCalls(calls []rpc.ResultToolCall, cut bool, room int) ([]rpc.ResultToolCall, bool) {
	if len(calls) == 0 {
		return nil, cut
	}
	// ,"tool_calls":[] and ,"tool_calls_truncated":true
	used := len(`,"tool_calls":[]`) + len(`,"tool_calls_truncated":true`)
	n := 0
	for n < len(calls) {
		size := JSONLen(calls[n]) + BoolInt(n > 0)
		if used+size > room {
			break
		}
		used += size
		n++
	}
	if n == 0 {
		return nil, true
	}
	return calls[:n:n], cut || n < len(calls)
}
