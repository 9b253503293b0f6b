package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"

	"dlgt/rpc"
)

// Fetch bounds of the contract.
const (
	fetchDefaultBytes = 32 << 10
	fetchHardBytes    = 256 << 10
	fetchMaxEvents    = 64
	fetchMaxResults   = 4
	fetchStable       = 128
	fetchStableMax    = 512
	fetchLiveRows     = 40
	fetchMaxWait      = 86_400_000
	// cliWrapper is what the CLI adds around a document:
	// {"ok":true, + document without its "{" + newline.
	cliWrapper = len(`{"ok":true,`) - 1 + 1
)

// currentMarkLocked is the watermark of everything recorded for s so far.
// s.mu held.
func (rt *runtime) currentMarkLocked(s *session) sessionMark {
	m := sessionMark{Row: s.rows.Committed(), Epoch: s.rec.Epoch, Event: s.lastEvent}
	m.Result = s.rec.LastExecSeq
	if s.exec != nil {
		m.Result = s.exec.seq - 1
	}
	return m
}

// fetchReq is a validated session.fetch.
type fetchReq struct {
	cursor    uint64
	hasCursor bool
	wait      time.Duration
	untilRes  bool
	screen    bool
	stableCap int
	budget    int // bytes for the document itself
}

func parseFetch(p *rpc.SessionFetchParams) (*fetchReq, error) {
	fr := &fetchReq{screen: true, stableCap: fetchStable}
	var perr *rpc.Error
	fr.cursor, fr.hasCursor, perr = rpc.ParsePosition(p.Cursor)
	if perr != nil {
		return nil, perr
	}
	if p.WaitMS < 0 || p.WaitMS > fetchMaxWait {
		return nil, rpc.InvalidField("wait_ms", "must be between 0 and %d", fetchMaxWait)
	}
	fr.wait = time.Duration(p.WaitMS) * time.Millisecond
	switch p.Until {
	case "", "any":
	case "result":
		fr.untilRes = true
	default:
		return nil, rpc.InvalidField("until", "must be \"any\" or \"result\"")
	}
	if raw := bytes.TrimSpace(p.Screen); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		var b bool
		var n int
		switch {
		case json.Unmarshal(raw, &b) == nil:
			fr.screen = b
		case json.Unmarshal(raw, &n) == nil && n >= 0 && n <= fetchStableMax:
			fr.stableCap = n
		default:
			return nil, rpc.InvalidField("screen", "must be a boolean or a stable-line count up to %d", fetchStableMax)
		}
	}
	max := p.MaxBytes
	switch {
	case max == 0:
		max = fetchDefaultBytes
	case max < 0 || max > fetchHardBytes:
		return nil, rpc.InvalidField("max_bytes", "must be between 1 and %d", fetchHardBytes)
	}
	fr.budget = max - cliWrapper
	return fr, nil
}

func (rt *runtime) sessionFetch(ctx context.Context, peer rpc.Peer, params json.RawMessage) (any, error) {
	var p rpc.SessionFetchParams
	if err := rpc.Decode(params, &p); err != nil {
		return nil, err
	}
	if p.All == (p.Session != "") {
		return nil, rpc.InvalidField("session", "give exactly one of session or all:true")
	}
	fr, err := parseFetch(&p)
	if err != nil {
		return nil, err
	}
	if p.All {
		return rt.fetchAll(ctx, &p, fr)
	}
	s, err := rt.resolve(p.Session)
	if err != nil {
		return nil, err
	}
	return rt.fetchSession(ctx, s, fr)
}

func (rt *runtime) runtimeInfo() rpc.Runtime {
	return rpc.Runtime{Version: Version, InstanceID: rt.instanceID}
}

func (rt *runtime) fetchSession(ctx context.Context, s *session, fr *fetchReq) (any, error) {
	if !fr.hasCursor {
		return rt.baseline(s, fr, rpc.ReasonSnapshot, nil, nil)
	}
	pos, err := rt.positions.get(s.uid, fr.cursor)
	if err != nil {
		return nil, err
	}
	// until:result binds to the execution active, or latest, now.
	s.mu.Lock()
	bound := s.rec.LastExecSeq
	s.mu.Unlock()
	var deadline <-chan time.Time
	if fr.wait > 0 {
		t := time.NewTimer(fr.wait)
		defer t.Stop()
		deadline = t.C
	}
	waited := false
	for {
		s.mu.Lock()
		changed := s.changed
		state := s.rec.State
		s.mu.Unlock()
		if gaps, top := rt.gapsFor(s, pos.mark); len(gaps)+len(top) > 0 {
			return rt.baseline(s, fr, rpc.ReasonGap, gaps, top)
		}
		var upto *sessionMark
		if pos.nextSet {
			if np, ok := rt.positions.lookup(s.uid, pos.next); ok {
				upto = &np.mark
			}
		}
		d, err := rt.buildDelta(s, pos.mark, upto, fr)
		if err != nil {
			return nil, err
		}
		gotBound := false
		for _, r := range d.bucket.Results {
			if r.ExecutionSeq == bound && (r.FinalTextComplete == nil || *r.FinalTextComplete) {
				gotBound = true
			}
		}
		advanced := d.mark != pos.mark
		done := d.hasMore || (!fr.untilRes && advanced) || (fr.untilRes && (gotBound || state == rpc.StateBlocked))
		if fr.untilRes && bound == 0 {
			done = true // nothing to wait for: the Session never accepted work
		}
		if done || deadline == nil {
			reason := rpc.ReasonChange
			switch {
			case d.hasMore:
				reason = rpc.ReasonPageFull
			case gotBound || (!fr.untilRes && len(d.bucket.Results) > 0):
				reason = rpc.ReasonResult
			case state == rpc.StateBlocked:
				reason = rpc.ReasonBlocked
			case !advanced:
				reason = rpc.ReasonTimeout
			}
			if !advanced && !waited && deadline == nil && reason == rpc.ReasonChange {
				reason = rpc.ReasonTimeout
			}
			cursor := fr.cursor
			if advanced {
				if upto != nil && d.mark == *upto {
					cursor = pos.next
				} else {
					cursor = rt.positions.mintSession(s.uid, d.mark)
					rt.positions.link(s.uid, pos, cursor)
				}
			}
			return d.document(rt, reason, cursor), nil
		}
		select {
		case <-changed:
			waited = true
		case <-deadline:
			deadline = nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// gapsFor reports retention overruns since mark: per-Session components
// (screen, results) and scope-wide ones (events).
func (rt *runtime) gapsFor(s *session, m sessionMark) (gaps, top []rpc.Gap) {
	if m.Row+1 < s.rows.First() {
		gaps = append(gaps, rpc.Gap{Component: "screen", Reason: "retention_overrun"})
	}
	if m.Result < rt.db.ResultsEvictedThrough(s.uid) {
		gaps = append(gaps, rpc.Gap{Component: "results", Reason: "retention_overrun"})
	}
	if m.Event < rt.db.EventsEvictedThrough() {
		if evs, err := rt.db.ReadEvents(m.Event, 1, s.uid); err == nil && len(evs) > 0 && evs[0].Seq > m.Event+1 {
			top = append(top, rpc.Gap{Component: "events", Reason: "retention_overrun"})
		}
	}
	return gaps, top
}

// delta is one Session's part of a fetch document under construction.
type delta struct {
	bucket  rpc.FetchSession
	mark    sessionMark
	hasMore bool
	gaps    []rpc.Gap
}

func (d *delta) document(rt *runtime, reason string, cursor uint64) *rpc.FetchDocument {
	gaps := d.gaps
	if gaps == nil {
		gaps = []rpc.Gap{}
	}
	return &rpc.FetchDocument{
		SchemaVersion: rpc.SchemaVersion, Runtime: rt.runtimeInfo(), Reason: reason,
		HasMore: d.hasMore, Gaps: gaps, Cursor: rpc.FormatPosition(cursor),
		Sessions: []rpc.FetchSession{d.bucket},
	}
}

func jsonLen(v any) int {
	b, _ := rpc.Marshal(v)
	return len(b)
}

// skeleton starts a delta: the Session snapshot and live screen, fitted
// to the budget (live rows are dropped from the top first). It fails with
// INVALID_ARGUMENT naming a verified workable max_bytes when even the
// envelope plus one chunk cannot fit.
func (rt *runtime) skeleton(s *session, from sessionMark, fr *fetchReq) (*delta, int, error) {
	s.mu.Lock()
	snap := s.snapshotLocked(time.Now())
	epoch, reason := s.rec.Epoch, s.rec.ResetReason
	s.mu.Unlock()
	d := &delta{mark: from, bucket: rpc.FetchSession{Session: snap, Events: []rpc.Event{}, Results: []rpc.Result{}, Gaps: []rpc.Gap{}}}
	d.mark.Epoch = epoch
	if fr.screen {
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
		sc.Live = live
		d.bucket.Screen = sc
	}
	doc := d.document(rt, rpc.ReasonPageFull, ^uint64(0))
	size := jsonLen(doc)
	for size+minChunk > fr.budget && d.bucket.Screen != nil && len(d.bucket.Screen.Live) > 0 {
		d.bucket.Screen.Live = d.bucket.Screen.Live[1:]
		d.bucket.Screen.LiveTruncated = true
		size = jsonLen(doc)
	}
	if size+minChunk > fr.budget {
		workable := size + minChunk + cliWrapper
		return nil, 0, &rpc.Error{Code: rpc.CodeInvalidArgument, Field: "max_bytes", WorkableMaxBytes: workable,
			Message: "max_bytes is too small for this Session's envelope plus one chunk; " + itoa(uint64(workable)) + " works"}
	}
	return d, fr.budget - size, nil
}

// minChunk is the room one piece of progress needs: a fragment with a
// few bytes of text.
const minChunk = 96

// buildDelta gathers what happened after from, bounded by upto (a replay)
// and by the budget.
func (rt *runtime) buildDelta(s *session, from sessionMark, upto *sessionMark, fr *fetchReq) (*delta, error) {
	d, room, err := rt.skeleton(s, from, fr)
	if err != nil {
		return nil, err
	}
	full := false
	add := func(n int, count int) bool {
		cost := n
		if count > 0 {
			cost++ // the comma
		}
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
			break
		}
		if i == fetchMaxEvents {
			full = true
			break
		}
		var ev rpc.Event
		if json.Unmarshal(e.Data, &ev) != nil {
			continue
		}
		if !add(len(e.Data), len(d.bucket.Events)) {
			break
		}
		d.bucket.Events = append(d.bucket.Events, ev)
		d.mark.Event = e.Seq
	}

	// Results, chunking a long final_text.
	if !full {
		rs, err := rt.db.ListResults(s.uid, from.Result, fetchMaxResults+1)
		if err != nil {
			return nil, err
		}
		for i, r := range rs {
			if upto != nil && (r.Seq > upto.Result+1 || (r.Seq == upto.Result+1 && upto.TextOff == 0)) {
				break
			}
			if i == fetchMaxResults {
				full = true
				break
			}
			var res rpc.Result
			if json.Unmarshal(r.Data, &res) != nil {
				continue
			}
			off := 0
			if r.Seq == from.Result+1 {
				off = from.TextOff
			}
			text := ""
			if res.FinalText != nil {
				text = *res.FinalText
			}
			end := len(text)
			if upto != nil && r.Seq == upto.Result+1 {
				end = upto.TextOff
			}
			piece, complete, ok := fitText(text[off:end], end == len(text), func(t string, c bool) int {
				return jsonLen(withChunk(res, t, off, c))
			}, room-boolInt(len(d.bucket.Results) > 0))
			if !ok {
				full = true
				break
			}
			chunk := withChunk(res, piece, off, complete)
			add(jsonLen(chunk), len(d.bucket.Results))
			d.bucket.Results = append(d.bucket.Results, chunk)
			if complete {
				d.mark.Result, d.mark.TextOff = r.Seq, 0
			} else {
				d.mark.Result, d.mark.TextOff = r.Seq-1, off+len(piece)
				full = true
				break
			}
		}
	}

	// Stable rows: fragment_before, whole rows, fragment_after.
	if !full && d.bucket.Screen != nil {
		rt.addRows(s, d, from, upto, fr, &room, &full)
	}
	d.hasMore = full
	return d, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// withChunk renders result r carrying text[off:] piece.
func withChunk(r rpc.Result, piece string, off int, complete bool) rpc.Result {
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
		for cut > 0 && !utf8.RuneStart(text[cut]) {
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

func (rt *runtime) addRows(s *session, d *delta, from sessionMark, upto *sessionMark, fr *fetchReq, room *int, full *bool) {
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
		frag := &rpc.Fragment{RowID: r.ID, Offset: from.RowOff}
		piece, complete, ok := fitText(r.Text[from.RowOff:end], end == len(r.Text), func(t string, c bool) int {
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
			d.mark.RowOff = from.RowOff + len(piece)
			*full = true
			return
		}
		d.mark.Row, d.mark.RowOff = r.ID, 0
		start = 1
	}
	for _, r := range rows[start:] {
		if upto != nil && (r.ID > upto.Row+1 || (r.ID == upto.Row+1 && upto.RowOff == 0)) {
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
		cost := jsonLen(r.Text) + boolInt(len(sc.Stable) > 0)
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
			sc.FragmentAfter = frag
			d.mark.RowOff = len(piece)
		}
		*full = true
		return
	}
}

// baseline is a cursorless (or post-gap) document: current state, the
// latest retained result, a stable tail, the live screen, and a fresh
// cursor marking everything recorded so far.
func (rt *runtime) baseline(s *session, fr *fetchReq, reason string, gaps, top []rpc.Gap) (any, error) {
	s.mu.Lock()
	mark := rt.currentMarkLocked(s)
	s.mu.Unlock()
	d, room, err := rt.skeleton(s, mark, fr)
	if err != nil {
		return nil, err
	}
	if d.bucket.Screen != nil {
		d.bucket.Screen.Reset = reason == rpc.ReasonGap
	}
	if gaps != nil {
		d.bucket.Gaps = gaps
		room -= jsonLen(gaps) - 2
	}
	if top != nil {
		d.gaps = top
		room -= jsonLen(top) - 2
	}
	if res, err := rt.latestResult(s); err == nil && res != nil {
		piece, complete, ok := fitText(derefText(res), true, func(t string, c bool) int {
			return jsonLen(withChunk(*res, t, 0, c))
		}, room)
		if ok {
			chunk := withChunk(*res, piece, 0, complete)
			room -= jsonLen(chunk)
			d.bucket.Results = append(d.bucket.Results, chunk)
		}
	}
	if d.bucket.Screen != nil && fr.stableCap > 0 {
		tail, _ := s.rows.ReadBefore(mark.Row+1, fr.stableCap)
		// Keep the newest rows that fit.
		i := len(tail)
		for i > 0 {
			cost := jsonLen(tail[i-1].Text) + boolInt(i < len(tail))
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
	cursor := rt.positions.mintSession(s.uid, mark)
	return d.document(rt, reason, cursor), nil
}

func derefText(r *rpc.Result) string {
	if r.FinalText == nil {
		return ""
	}
	return *r.FinalText
}

// fetchAll is session.fetch with all:true. It pages at 32 Sessions and
// rejects screen aggregation and until:"result".
func (rt *runtime) fetchAll(ctx context.Context, p *rpc.SessionFetchParams, fr *fetchReq) (any, error) {
	if fr.untilRes {
		return nil, rpc.InvalidField("until", "all:true does not support until:\"result\"")
	}
	if len(bytes.TrimSpace(p.Screen)) > 0 && !bytes.Equal(bytes.TrimSpace(p.Screen), []byte("false")) && !bytes.Equal(bytes.TrimSpace(p.Screen), []byte("null")) {
		return nil, rpc.InvalidField("screen", "all:true does not aggregate screens")
	}
	return nil, rpc.Errorf(rpc.CodeInvalidArgument, "all:true is not implemented by this daemon version yet; fetch one Session at a time")
}
