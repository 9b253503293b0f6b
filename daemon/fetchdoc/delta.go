// One Session's fetch document, as pure functions of a sessionState
// (fetch_state.go) and the request: the delta after a mark (events,
// results, stable rows), bounded by a replay's successor and by the
// budget, and the bounded baseline a cursorless fetch or a gap returns.

package fetchdoc

import (
	"encoding/json"

	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

// delta is one Session's part of a fetch document under construction.
type Delta struct {
	Bucket  rpc.FetchSession
	Mark    Mark
	HasMore bool
	Gaps    []rpc.Gap
}

func (d *Delta) Document(env rpc.Runtime, reason string, cursor uint64) *rpc.FetchDocument {
	return newDocument(env, reason, d.HasMore, d.Gaps, cursor, []rpc.FetchSession{d.Bucket})
}

// newDocument is a fetch document of the daemon env.
func newDocument(env rpc.Runtime, reason string, hasMore bool, gaps []rpc.Gap, cursor uint64, buckets []rpc.FetchSession) *rpc.FetchDocument {
	if gaps == nil {
		gaps = []rpc.Gap{}
	}
	if buckets == nil {
		buckets = []rpc.FetchSession{}
	}
	return &rpc.FetchDocument{
		SchemaVersion: rpc.SchemaVersion, Runtime: env, Reason: reason,
		HasMore: hasMore, Gaps: gaps, Cursor: rpc.FormatPosition(cursor), Sessions: buckets,
	}
}

// bucketOf starts st's bucket: the snapshot and, withScreen, the live
// screen (live rows beyond the bound dropped from the top; a reset when
// the epoch moved since from).
func bucketOf(st *State, from Mark, withScreen bool) rpc.FetchSession {
	b := rpc.FetchSession{Session: st.Session, Events: []rpc.Event{}, Results: []rpc.Result{}, Gaps: []rpc.Gap{}}
	if withScreen {
		live := st.Live
		sc := &rpc.Screen{Epoch: st.Epoch, Stable: []string{}, Live: []string{}}
		if from.Epoch != 0 && st.Epoch != from.Epoch {
			sc.Reset = true
			r := st.ResetReason
			sc.ResetReason = &r
		}
		if len(live) > liveRows {
			live, sc.LiveTruncated = live[len(live)-liveRows:], true
		}
		if live != nil {
			sc.Live = live // resliced, never written: st stays as taken
		}
		b.Screen = sc
	}
	return b
}

// skeletonOf starts a delta: the Session snapshot and live screen, fitted
// to the budget (live rows are dropped from the top first). It fails with
// errTooSmall when even the envelope plus one chunk cannot fit.
func skeletonOf(env rpc.Runtime, st *State, from Mark, fr *Req, gaps, top []rpc.Gap) (*Delta, int, error) {
	d := &Delta{Mark: from, Bucket: bucketOf(st, from, fr.Screen), Gaps: top}
	if gaps != nil {
		d.Bucket.Gaps = gaps
	}
	d.Mark.Epoch = st.Epoch
	d.Mark.Pending = st.Cur.Pending // the bucket's snapshot shows it
	size := worstSize(env, d.Gaps, []rpc.FetchSession{d.Bucket})
	for size+minChunk > fr.Budget && d.Bucket.Screen != nil && len(d.Bucket.Screen.Live) > 0 {
		sc := d.Bucket.Screen
		cut := max(1, len(sc.Live)/4)
		sc.Live = sc.Live[cut:]
		sc.LiveTruncated = true
		size = worstSize(env, d.Gaps, []rpc.FetchSession{d.Bucket})
	}
	if size+minChunk > fr.Budget {
		return nil, 0, errTooSmall
	}
	return d, fr.Budget - size, nil
}

// deltaOf is what happened after from (st read from it), bounded by upto
// (a replay) and by the budget.
func DeltaOf(env rpc.Runtime, st *State, from Mark, upto *Mark, fr *Req) (*Delta, error) {
	d, room, err := skeletonOf(env, st, from, fr, nil, nil)
	if err != nil {
		return nil, err
	}
	if upto != nil {
		// A replay reaches its successor's pending request, as every
		// other component: a successor minted for a request that came
		// and went since is reached, not left as a delta that is cut
		// with no progress (too small for any max_bytes, every retry).
		d.Mark.Pending = upto.Pending
	}
	full, cut := false, false
	add := func(n int, count int) bool {
		cost := n + BoolInt(count > 0) // the comma
		if cost > room {
			full = true
			return false
		}
		room -= cost
		return true
	}

	// Events, in seq order.
	for i, e := range st.Events {
		if upto != nil && e.Seq > upto.Event {
			cut = true
			break
		}
		if i == MaxEvents {
			full = true
			break
		}
		var ev rpc.Event
		if json.Unmarshal(e.Data, &ev) != nil {
			d.Mark.Event = e.Seq
			continue
		}
		if !add(JSONLen(ev), len(d.Bucket.Events)) {
			break
		}
		d.Bucket.Events = append(d.Bucket.Events, ev)
		d.Mark.Event = e.Seq
	}

	// Results, chunking a long final_text. Components advance
	// independently: one that does not fit leaves has_more set, and the
	// others still make progress in the remaining room (so a verified
	// workable max_bytes keeps working when an unchunkable event arrives
	// ahead of the chunk it was verified with).
	nres := 0
	addResults(st.Results, from, upto, &d.Mark, &d.Bucket.Results, &nres, &room, &full, &cut, fr.ToolCalls)

	// Stable rows: fragment_before, whole rows, fragment_after.
	if d.Bucket.Screen != nil && fr.StableCap > 0 {
		addRows(st.Rows, d, from, upto, fr, &room, &full, &cut)
	}
	d.HasMore = full || cut
	if d.HasMore && d.Mark == from {
		return nil, errTooSmall
	}
	if worstSize(env, d.Gaps, []rpc.FetchSession{d.Bucket}) > fr.Budget {
		return nil, errTooSmall // accounting slip: never emit an oversized document
	}
	return d, nil
}

// addResults appends the results in rs (ascending, seq > from.Result) to
// out, chunking a final_text that does not fit, and advances mark.
func addResults(rs []store.Result, from Mark, upto, mark *Mark, out *[]rpc.Result, nres, room *int, full, cut *bool, tools bool) {
	for _, r := range rs {
		if r.Seq <= mark.Result {
			continue
		}
		if upto != nil && (r.Seq > upto.Result+1 || (r.Seq == upto.Result+1 && upto.TextOff == 0)) {
			*cut = true
			return
		}
		if *nres >= MaxResults {
			*full = true
			return
		}
		var res rpc.Result
		if json.Unmarshal(r.Data, &res) != nil {
			mark.Result, mark.TextOff = r.Seq, 0
			continue
		}
		off := 0
		if r.Seq == from.Result+1 {
			off = from.TextOff
		}
		text := DerefText(&res)
		end := len(text)
		if upto != nil && r.Seq == upto.Result+1 {
			end = upto.TextOff
		}
		if off > end {
			off = end
		}
		comma := BoolInt(len(*out) > 0)
		res, piece, complete, ok := fitChunk(res, text[off:end], end == len(text), off, *room-comma, tools)
		if !ok {
			*full = true
			return
		}
		chunk := WithChunk(res, piece, off, complete)
		*room -= JSONLen(chunk) + comma
		*out = append(*out, chunk)
		*nres++
		if complete {
			mark.Result, mark.TextOff = r.Seq, 0
			continue
		}
		mark.Result, mark.TextOff = r.Seq-1, off+len(piece)
		if end == len(text) {
			*full = true
		} else {
			*cut = true
		}
		return
	}
}

// addRows adds the stable rows read after from (rows) to d's screen.
func addRows(rows []store.Row, d *Delta, from Mark, upto *Mark, fr *Req, room *int, full, cut *bool) {
	sc := d.Bucket.Screen
	limit := fr.StableCap
	if len(rows) == 0 {
		return
	}
	if from.Row+1 < rows[0].ID {
		// Rows were evicted under us; the next call reports the gap.
		return
	}
	// A row split by the previous response continues in fragment_before.
	start := 0
	if from.RowOff > 0 {
		r := rows[0]
		end := len(r.Text)
		if upto != nil && upto.Row+1 == r.ID {
			end = upto.RowOff
		}
		if upto != nil && upto.Row < r.ID && end <= from.RowOff {
			*cut = true
			return
		}
		off := min(from.RowOff, end)
		frag := &rpc.Fragment{RowID: r.ID, Offset: off}
		piece, complete, ok := fitText(r.Text[off:end], end == len(r.Text), func(t string, c bool) int {
			frag.Text, frag.Complete = t, c
			return JSONLen(frag) + len(`,"fragment_before":`)
		}, *room)
		if !ok {
			*full = true
			return
		}
		frag.Text, frag.Complete = piece, complete
		*room -= JSONLen(frag) + len(`,"fragment_before":`)
		sc.FragmentBefore = frag
		if !complete {
			d.Mark.RowOff = off + len(piece)
			if end == len(r.Text) {
				*full = true
			} else {
				*cut = true
			}
			return
		}
		d.Mark.Row, d.Mark.RowOff = r.ID, 0
		start = 1
	}
	for _, r := range rows[start:] {
		if upto != nil && (r.ID > upto.Row+1 || (r.ID == upto.Row+1 && upto.RowOff == 0)) {
			*cut = true
			return
		}
		if len(sc.Stable) >= limit {
			*full = true
			return
		}
		partialEnd := len(r.Text)
		if upto != nil && r.ID == upto.Row+1 {
			partialEnd = upto.RowOff
		}
		cost := JSONStrLen(r.Text) + BoolInt(len(sc.Stable) > 0)
		if partialEnd == len(r.Text) && cost <= *room {
			*room -= cost
			sc.Stable = append(sc.Stable, r.Text)
			d.Mark.Row = r.ID
			continue
		}
		// Chunk this row mid-line into fragment_after.
		frag := &rpc.Fragment{RowID: r.ID}
		piece, _, ok := fitText(r.Text[:partialEnd], false, func(t string, _ bool) int {
			frag.Text = t
			return JSONLen(frag) + len(`,"fragment_after":`)
		}, *room)
		if ok {
			frag.Text = piece
			*room -= JSONLen(frag) + len(`,"fragment_after":`)
			sc.FragmentAfter = frag
			d.Mark.RowOff = len(piece)
		}
		if partialEnd < len(r.Text) && ok && len(piece) == partialEnd {
			*cut = true
		} else {
			*full = true
		}
		return
	}
}

// baselineOf is a bounded baseline of st (read by takeBaseline, or by
// takeStep on a gap): current state, the latest retained result, a stable
// tail, the live screen, and a mark of everything recorded so far (less
// any part of the latest result that did not fit).
func BaselineOf(env rpc.Runtime, st *State, fr *Req, gaps, top []rpc.Gap) (*Delta, error) {
	mark := st.Cur
	d, room, err := skeletonOf(env, st, mark, fr, gaps, top)
	if err != nil {
		return nil, err
	}
	if d.Bucket.Screen != nil && gaps != nil {
		for _, g := range gaps {
			if g.Component == "screen" {
				d.Bucket.Screen.Reset = true
				r := "retention_overrun"
				d.Bucket.Screen.ResetReason = &r
			}
		}
	}
	if st.LatestErr != nil {
		return nil, st.LatestErr
	}
	baselineResult(st.Latest, st.LatestEnd, &mark, &d.Bucket, &room, &d.HasMore, fr.ToolCalls)
	if d.Bucket.Screen != nil && fr.StableCap > 0 {
		tail := st.Tail
		// Keep the newest rows that fit.
		i := len(tail)
		for i > 0 {
			cost := JSONStrLen(tail[i-1].Text) + BoolInt(i < len(tail))
			if cost > room {
				break
			}
			room -= cost
			i--
		}
		for _, r := range tail[i:] {
			d.Bucket.Screen.Stable = append(d.Bucket.Screen.Stable, r.Text)
		}
	}
	d.Mark = mark
	if worstSize(env, d.Gaps, []rpc.FetchSession{d.Bucket}) > fr.Budget {
		return nil, errTooSmall
	}
	return d, nil
}

// baselineResult adds res, the latest result retained at or before mark
// (a replay: the one to reproduce, of which end bytes of final_text; end
// -1: all), to b. A final_text that does not fit is chunked and mark is
// set back to continue it.
func baselineResult(res *rpc.Result, end int, mark *Mark, b *rpc.FetchSession, room *int, hasMore *bool, tools bool) {
	if res == nil {
		return
	}
	text := DerefText(res)
	if end < 0 || end > len(text) {
		end = len(text)
	}
	comma := BoolInt(len(b.Results) > 0)
	r, piece, complete, ok := fitChunk(*res, text[:end], end == len(text), 0, *room-comma, tools)
	if !ok {
		mark.Result, mark.TextOff = res.ExecutionSeq-1, 0
		*hasMore = true
		return
	}
	chunk := WithChunk(r, piece, 0, complete)
	*room -= JSONLen(chunk) + comma
	b.Results = append(b.Results, chunk)
	if complete {
		if mark.Result < res.ExecutionSeq {
			mark.Result, mark.TextOff = res.ExecutionSeq, 0
		}
	} else {
		mark.Result, mark.TextOff = res.ExecutionSeq-1, len(piece)
		*hasMore = true
	}
}

func DerefText(r *rpc.Result) string {
	if r.FinalText == nil {
		return ""
	}
	return *r.FinalText
}
