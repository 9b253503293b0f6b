// One Session's fetch document: the delta after a mark (events, results,
// stable rows), bounded by a replay's successor and by the budget, and the
// bounded baseline a cursorless fetch or a gap returns.

package daemon

import (
	"encoding/json"
	"time"

	"dlgt/rpc"
	"dlgt/store"
)

// delta is one Session's part of a fetch document under construction.
type delta struct {
	bucket  rpc.FetchSession
	mark    sessionMark
	hasMore bool
	gaps    []rpc.Gap
}

func (d *delta) document(rt *runtime, reason string, cursor uint64) *rpc.FetchDocument {
	return rt.newDocument(reason, d.hasMore, d.gaps, cursor, []rpc.FetchSession{d.bucket})
}

func (rt *runtime) newDocument(reason string, hasMore bool, gaps []rpc.Gap, cursor uint64, buckets []rpc.FetchSession) *rpc.FetchDocument {
	if gaps == nil {
		gaps = []rpc.Gap{}
	}
	if buckets == nil {
		buckets = []rpc.FetchSession{}
	}
	return &rpc.FetchDocument{
		SchemaVersion: rpc.SchemaVersion, Runtime: rt.runtimeInfo(), Reason: reason,
		HasMore: hasMore, Gaps: gaps, Cursor: rpc.FormatPosition(cursor), Sessions: buckets,
	}
}

// sessionBucket starts s's bucket: the snapshot and, when asked, the live
// screen (live rows beyond the bound dropped from the top).
func (rt *runtime) sessionBucket(s *session, from sessionMark, fr *fetchReq, withScreen bool) (rpc.FetchSession, uint64) {
	s.mu.Lock()
	snap := s.snapshotLocked(time.Now())
	epoch, reason := s.rec.Epoch, s.rec.ResetReason
	s.mu.Unlock()
	b := rpc.FetchSession{Session: snap, Events: []rpc.Event{}, Results: []rpc.Result{}, Gaps: []rpc.Gap{}}
	if withScreen && fr.screen {
		live := s.liveRows()
		sc := &rpc.Screen{Epoch: epoch, Stable: []string{}, Live: []string{}}
		if from.Epoch != 0 && epoch != from.Epoch {
			sc.Reset = true
			r := reason
			sc.ResetReason = &r
		}
		if len(live) > fetchLiveRows {
			live, sc.LiveTruncated = live[len(live)-fetchLiveRows:], true
		}
		if live != nil {
			sc.Live = live
		}
		b.Screen = sc
	}
	return b, epoch
}

// skeleton starts a delta: the Session snapshot and live screen, fitted
// to the budget (live rows are dropped from the top first). It fails with
// errTooSmall when even the envelope plus one chunk cannot fit.
func (rt *runtime) skeleton(s *session, from sessionMark, fr *fetchReq, gaps, top []rpc.Gap) (*delta, int, error) {
	b, epoch := rt.sessionBucket(s, from, fr, true)
	d := &delta{mark: from, bucket: b, gaps: top}
	if gaps != nil {
		d.bucket.Gaps = gaps
	}
	d.mark.Epoch = epoch
	size := rt.worstSize(d.gaps, []rpc.FetchSession{d.bucket})
	for size+minChunk > fr.budget && d.bucket.Screen != nil && len(d.bucket.Screen.Live) > 0 {
		sc := d.bucket.Screen
		cut := max(1, len(sc.Live)/4)
		sc.Live = sc.Live[cut:]
		sc.LiveTruncated = true
		size = rt.worstSize(d.gaps, []rpc.FetchSession{d.bucket})
	}
	if size+minChunk > fr.budget {
		return nil, 0, errTooSmall
	}
	return d, fr.budget - size, nil
}

// buildDelta gathers what happened after from, bounded by upto (a replay)
// and by the budget.
func (rt *runtime) buildDelta(s *session, from sessionMark, upto *sessionMark, fr *fetchReq) (*delta, error) {
	d, room, err := rt.skeleton(s, from, fr, nil, nil)
	if err != nil {
		return nil, err
	}
	full, cut := false, false
	add := func(n int, count int) bool {
		cost := n + boolInt(count > 0) // the comma
		if cost > room {
			full = true
			return false
		}
		room -= cost
		return true
	}

	// Events, in seq order.
	evs, err := rt.db.ReadEvents(from.Event, fetchMaxEvents+1, s.uid)
	if err != nil {
		return nil, err
	}
	for i, e := range evs {
		if upto != nil && e.Seq > upto.Event {
			cut = true
			break
		}
		if i == fetchMaxEvents {
			full = true
			break
		}
		var ev rpc.Event
		if json.Unmarshal(e.Data, &ev) != nil {
			d.mark.Event = e.Seq
			continue
		}
		if !add(jsonLen(ev), len(d.bucket.Events)) {
			break
		}
		d.bucket.Events = append(d.bucket.Events, ev)
		d.mark.Event = e.Seq
	}

	// Results, chunking a long final_text. Components advance
	// independently: one that does not fit leaves has_more set, and the
	// others still make progress in the remaining room (so a verified
	// workable max_bytes keeps working when an unchunkable event arrives
	// ahead of the chunk it was verified with).
	var rs []store.Result
	rs, err = rt.db.ListResults(s.uid, from.Result, fetchMaxResults+1)
	if err != nil {
		return nil, err
	}
	nres := 0
	rt.addResults(rs, from, upto, &d.mark, &d.bucket.Results, &nres, &room, &full, &cut)

	// Stable rows: fragment_before, whole rows, fragment_after.
	if d.bucket.Screen != nil && fr.stableCap > 0 {
		rt.addRows(s, d, from, upto, fr, &room, &full, &cut)
	}
	d.hasMore = full || cut
	if d.hasMore && d.mark == from {
		return nil, errTooSmall
	}
	if rt.worstSize(d.gaps, []rpc.FetchSession{d.bucket}) > fr.budget {
		return nil, errTooSmall // accounting slip: never emit an oversized document
	}
	return d, nil
}

// addResults appends the results in rs (ascending, seq > from.Result) to
// out, chunking a final_text that does not fit, and advances mark.
func (rt *runtime) addResults(rs []store.Result, from sessionMark, upto, mark *sessionMark, out *[]rpc.Result, nres, room *int, full, cut *bool) {
	for _, r := range rs {
		if r.Seq <= mark.Result {
			continue
		}
		if upto != nil && (r.Seq > upto.Result+1 || (r.Seq == upto.Result+1 && upto.TextOff == 0)) {
			*cut = true
			return
		}
		if *nres >= fetchMaxResults {
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
		text := derefText(&res)
		end := len(text)
		if upto != nil && r.Seq == upto.Result+1 {
			end = upto.TextOff
		}
		if off > end {
			off = end
		}
		comma := boolInt(len(*out) > 0)
		piece, complete, ok := fitText(text[off:end], end == len(text), chunkSizer(res, off), *room-comma)
		if !ok {
			*full = true
			return
		}
		chunk := withChunk(res, piece, off, complete)
		*room -= jsonLen(chunk) + comma
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

func (rt *runtime) addRows(s *session, d *delta, from sessionMark, upto *sessionMark, fr *fetchReq, room *int, full, cut *bool) {
	sc := d.bucket.Screen
	limit := fr.stableCap
	rows, err := s.rows.Read(from.Row+1, limit+2)
	if err != nil || len(rows) == 0 {
		return
	}
	if from.Row+1 < rows[0].ID {
		// Rows were evicted under us; gapsFor reports it on the next call.
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
			return jsonLen(frag) + len(`,"fragment_before":`)
		}, *room)
		if !ok {
			*full = true
			return
		}
		frag.Text, frag.Complete = piece, complete
		*room -= jsonLen(frag) + len(`,"fragment_before":`)
		sc.FragmentBefore = frag
		if !complete {
			d.mark.RowOff = off + len(piece)
			if end == len(r.Text) {
				*full = true
			} else {
				*cut = true
			}
			return
		}
		d.mark.Row, d.mark.RowOff = r.ID, 0
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
		cost := jsonStrLen(r.Text) + boolInt(len(sc.Stable) > 0)
		if partialEnd == len(r.Text) && cost <= *room {
			*room -= cost
			sc.Stable = append(sc.Stable, r.Text)
			d.mark.Row = r.ID
			continue
		}
		// Chunk this row mid-line into fragment_after.
		frag := &rpc.Fragment{RowID: r.ID}
		piece, _, ok := fitText(r.Text[:partialEnd], false, func(t string, _ bool) int {
			frag.Text = t
			return jsonLen(frag) + len(`,"fragment_after":`)
		}, *room)
		if ok {
			frag.Text = piece
			*room -= jsonLen(frag) + len(`,"fragment_after":`)
			sc.FragmentAfter = frag
			d.mark.RowOff = len(piece)
		}
		if partialEnd < len(r.Text) && ok && len(piece) == partialEnd {
			*cut = true
		} else {
			*full = true
		}
		return
	}
}

// baselineDoc renders a cursorless (or post-gap) document and mints its
// position.
func (rt *runtime) baselineDoc(s *session, fr *fetchReq, reason string, gaps, top []rpc.Gap) (any, error) {
	d, err := fit(fr, func(fr *fetchReq) (*delta, error) { return rt.baseline(s, fr, gaps, top) })
	if err != nil {
		return nil, err
	}
	cursor := rt.positions.mintSession(s.uid, d.mark)
	return d.document(rt, reason, cursor), nil
}

// baseline is a bounded baseline: current state, the latest retained
// result, a stable tail, the live screen, and a mark of everything
// recorded so far (less any part of the latest result that did not fit).
func (rt *runtime) baseline(s *session, fr *fetchReq, gaps, top []rpc.Gap) (*delta, error) {
	s.mu.Lock()
	mark := rt.currentMarkLocked(s)
	s.mu.Unlock()
	d, room, err := rt.skeleton(s, mark, fr, gaps, top)
	if err != nil {
		return nil, err
	}
	if d.bucket.Screen != nil && gaps != nil {
		for _, g := range gaps {
			if g.Component == "screen" {
				d.bucket.Screen.Reset = true
				r := "retention_overrun"
				d.bucket.Screen.ResetReason = &r
			}
		}
	}
	if err := rt.baselineResult(s, &mark, nil, &d.bucket, &room, &d.hasMore); err != nil {
		return nil, err
	}
	if d.bucket.Screen != nil && fr.stableCap > 0 {
		tail, _ := s.rows.ReadBefore(mark.Row+1, fr.stableCap)
		// Keep the newest rows that fit.
		i := len(tail)
		for i > 0 {
			cost := jsonStrLen(tail[i-1].Text) + boolInt(i < len(tail))
			if cost > room {
				break
			}
			room -= cost
			i--
		}
		for _, r := range tail[i:] {
			d.bucket.Screen.Stable = append(d.bucket.Screen.Stable, r.Text)
		}
	}
	d.mark = mark
	if rt.worstSize(d.gaps, []rpc.FetchSession{d.bucket}) > fr.budget {
		return nil, errTooSmall
	}
	return d, nil
}

// baselineResult adds the latest result retained at or before mark (a
// replay passes the mark it must reproduce as upto). A final_text that
// does not fit is chunked and mark is set back to continue it.
func (rt *runtime) baselineResult(s *session, mark, upto *sessionMark, b *rpc.FetchSession, room *int, hasMore *bool) error {
	var (
		res *rpc.Result
		end = -1
	)
	if upto != nil && upto.TextOff > 0 {
		rs, err := rt.db.ListResults(s.uid, upto.Result, 1)
		if err != nil {
			return err
		}
		if len(rs) == 1 && rs[0].Seq == upto.Result+1 {
			var r rpc.Result
			if json.Unmarshal(rs[0].Data, &r) == nil {
				res, end = &r, upto.TextOff
			}
		}
	} else {
		lim := mark.Result
		if upto != nil {
			lim = upto.Result
		}
		var err error
		if res, err = rt.resultAtOrBefore(s, lim); err != nil {
			return err
		}
	}
	if res == nil {
		return nil
	}
	text := derefText(res)
	if end < 0 || end > len(text) {
		end = len(text)
	}
	comma := boolInt(len(b.Results) > 0)
	piece, complete, ok := fitText(text[:end], end == len(text), chunkSizer(*res, 0), *room-comma)
	if !ok {
		mark.Result, mark.TextOff = res.ExecutionSeq-1, 0
		*hasMore = true
		return nil
	}
	chunk := withChunk(*res, piece, 0, complete)
	*room -= jsonLen(chunk) + comma
	b.Results = append(b.Results, chunk)
	if complete {
		if mark.Result < res.ExecutionSeq {
			mark.Result, mark.TextOff = res.ExecutionSeq, 0
		}
	} else {
		mark.Result, mark.TextOff = res.ExecutionSeq-1, len(piece)
		*hasMore = true
	}
	return nil
}

// resultAtOrBefore is the newest retained result of s with seq <= lim.
func (rt *runtime) resultAtOrBefore(s *session, lim uint64) (*rpc.Result, error) {
	stored, ok, err := rt.db.ResultAtOrBefore(s.uid, lim)
	if err != nil || !ok {
		return nil, err
	}
	var r rpc.Result
	if err := json.Unmarshal(stored.Data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func derefText(r *rpc.Result) string {
	if r.FinalText == nil {
		return ""
	}
	return *r.FinalText
}
