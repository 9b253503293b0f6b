package daemon

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/dlgt-dev/dlgt/daemon/scrollback"
	"github.com/dlgt-dev/dlgt/rpc"
	"github.com/dlgt-dev/dlgt/store"
)

func (rt *runtime) sessionList(ctx context.Context, peer rpc.Peer, p rpc.SessionListParams) (rpc.SessionListResult, error) {
	rt.mu.Lock()
	all := make([]*session, 0, len(rt.sessions))
	for _, s := range rt.sessions {
		all = append(all, s)
	}
	rt.mu.Unlock()
	now := time.Now()
	out := rpc.SessionListResult{Sessions: []rpc.Session{}}
	for _, s := range all {
		s.mu.Lock()
		snap := s.snapshotLocked(now)
		s.mu.Unlock()
		if snap.ID == "" || (!p.All && terminal(lifecycleState(snap.State))) {
			continue
		}
		out.Sessions = append(out.Sessions, snap)
	}
	sort.Slice(out.Sessions, func(i, j int) bool {
		a, b := out.Sessions[i], out.Sessions[j]
		if a.CreatedAtMS != b.CreatedAtMS {
			return a.CreatedAtMS < b.CreatedAtMS
		}
		return a.ID < b.ID
	})
	return out, nil
}

// latestResult is the newest retained result of s, if any.
func (rt *runtime) latestResult(s *session) (*rpc.Result, error) {
	s.mu.Lock()
	last := s.rec.LastExecSeq
	s.mu.Unlock()
	return rt.fetch.resultAtOrBefore(s, last)
}

func (rt *runtime) sessionRead(ctx context.Context, peer rpc.Peer, p rpc.SessionReadParams) (rpc.SessionReadResult, error) {
	s, err := rt.resolveLast(p.Session)
	if err != nil {
		return rpc.SessionReadResult{}, err
	}
	res, err := rt.latestResult(s)
	if err != nil {
		return rpc.SessionReadResult{}, err
	}
	return rpc.SessionReadResult{Session: s.snapshot(), Result: res}, nil
}

// maxEventRead bounds one event.read page; callers continue with after.
const maxEventRead = 1000

func (rt *runtime) eventFilter(ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	s, err := rt.resolve(ref)
	if err != nil {
		return "", err
	}
	return s.uid, nil
}

func decodeEvents(evs []store.Event) []json.RawMessage {
	out := make([]json.RawMessage, len(evs))
	for i, e := range evs {
		out[i] = e.Data
	}
	return out
}

func (rt *runtime) eventRead(ctx context.Context, peer rpc.Peer, p rpc.EventReadParams) (rpc.Reply[[]rpc.Event], error) {
	uid, err := rt.eventFilter(p.Session)
	if err != nil {
		return rpc.Reply[[]rpc.Event]{}, err
	}
	var after uint64
	if p.After != nil {
		after = *p.After
	}
	evs, err := rt.db.ReadEvents(after, maxEventRead, uid)
	if err != nil {
		return rpc.Reply[[]rpc.Event]{}, err
	}
	if p.ToolCalls {
		return rt.withToolCalls(uid, p, evs), nil
	}
	return rpc.Encoded[[]rpc.Event](decodeEvents(evs)), nil
}

// eventStream is event.subscribe: an ack, then every event after the
// starting seq, one per line, read from the store as it grows. A client
// that cannot keep up exceeds its connection's pending budget and is
// disconnected by the transport; nothing here buffers for it.
type eventStream struct {
	rt    *runtime
	uid   string
	after uint64
}

func (es *eventStream) Ack() rpc.SubscribeAck {
	return rpc.SubscribeAck{Subscribed: true, After: es.after}
}

func (es *eventStream) Run(ctx context.Context, emit func([]byte) error) error {
	rt := es.rt
	for {
		rt.mu.Lock()
		changed := rt.allChanged
		rt.mu.Unlock()
		for {
			if ev := rt.db.EventsEvictedThrough(); ev > es.after {
				return errors.New("subscriber fell behind event retention")
			}
			evs, err := rt.db.ReadEvents(es.after, 256, es.uid)
			if err != nil {
				return err
			}
			for _, e := range evs {
				if err := emit(e.Data); err != nil {
					return err
				}
				es.after = e.Seq
			}
			if len(evs) < 256 {
				break
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (rt *runtime) eventSubscribe(ctx context.Context, peer rpc.Peer, p rpc.EventReadParams) (rpc.Reply[rpc.SubscribeAck], error) {
	uid, err := rt.eventFilter(p.Session)
	if err != nil {
		return rpc.Reply[rpc.SubscribeAck]{}, err
	}
	after := rt.db.LastEventSeq()
	if p.After != nil {
		after = *p.After
	}
	if p.ToolCalls {
		return rpc.Streamed[rpc.SubscribeAck](&toolStream{rt: rt, uid: uid, after: after, toolAfter: rt.toolStart(p, true)}), nil
	}
	return rpc.Streamed[rpc.SubscribeAck](&eventStream{rt: rt, uid: uid, after: after}), nil
}

// scrollbackRead is scrollback.read: the paging is package scrollback's.
func (rt *runtime) scrollbackRead(ctx context.Context, peer rpc.Peer, p rpc.ScrollbackReadParams) (rpc.ScrollbackPage, error) {
	s, err := rt.resolveLast(p.Session)
	if err != nil {
		return rpc.ScrollbackPage{}, err
	}
	s.mu.Lock()
	out := rpc.ScrollbackPage{SessionID: s.rec.ID, Screen: rpc.ScreenSize{Rows: s.rec.Rows, Cols: s.rec.Cols}}
	s.mu.Unlock()
	s.termMu.Lock()
	out.AlternateScreen = s.screen != nil && s.screen.AltScreen()
	s.termMu.Unlock()
	if err := scrollback.Read(s.rows, p.Before, p.Lines, s.scrollbackLive, &out); err != nil {
		return rpc.ScrollbackPage{}, err
	}
	return out, nil
}

// scrollbackLive is the live grid as scrollback.read joins it to the
// history: liveRows without the rows at its top that an inline TUI
// repainted after a resize although they are stable rows already (vt's
// LiveRepeated; they are not stored again when they scroll off).
func (s *session) scrollbackLive() []string {
	s.termMu.Lock()
	screen := s.screen
	var rows []string
	k := 0
	if screen != nil {
		rows, k = screen.Live(), screen.LiveRepeated()
	}
	s.termMu.Unlock()
	if screen == nil {
		return s.liveRows()
	}
	rows = scrollback.TrimBlank(rows)
	return rows[min(k, len(rows)):]
}

// liveRows renders the live grid with trailing blank rows dropped.
func (s *session) liveRows() []string {
	s.termMu.Lock()
	screen := s.screen
	var rows []string
	if screen != nil {
		rows = screen.Live()
	}
	s.termMu.Unlock()
	if screen == nil {
		s.mu.Lock()
		rows = append([]string(nil), s.rec.FinalLive...)
		s.mu.Unlock()
	}
	return scrollback.TrimBlank(rows)
}

func (rt *runtime) transcriptReadRaw(ctx context.Context, peer rpc.Peer, p rpc.TranscriptReadRawParams) (rpc.RawPage, error) {
	if p.After < 0 {
		return rpc.RawPage{}, rpc.InvalidField("after", "must not be negative")
	}
	limit := p.LimitBytes
	switch {
	case limit == 0:
		limit = store.DefaultRawPage
	case limit < 0:
		return rpc.RawPage{}, rpc.InvalidField("limit_bytes", "must be positive")
	case limit > store.MaxRawPage:
		limit = store.MaxRawPage
	}
	s, err := rt.resolveLast(p.Session)
	if err != nil {
		return rpc.RawPage{}, err
	}
	data, start, next, more, err := s.raw.ReadAt(p.After, limit)
	if err != nil {
		return rpc.RawPage{}, err
	}
	return rpc.RawPage{
		SessionID: s.snapshot().ID, DataBase64: base64.StdEncoding.EncodeToString(data),
		ByteLen: len(data), Start: start, NextAfter: next, HasMore: more,
	}, nil
}
