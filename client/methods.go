package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net"
	"os"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// call makes one typed call on a fresh connection to the daemon the
// policy names for ref. ctx ending closes the connection, so a blocked
// long poll ends with it.
func call[P, R any](ctx context.Context, c *Client, m rpc.Method[P, R], ref string, params P) (R, error) {
	var zero R
	rc, err := c.Dial(ctx, ref)
	if err != nil {
		return zero, err
	}
	defer rc.Close()
	stop := context.AfterFunc(ctx, func() { rc.Close() })
	defer stop()
	if c.raw == nil {
		return m.Call(ctx, rc, params)
	}
	if err := rc.Call(ctx, m.Name, params, c.raw); err != nil {
		return zero, err
	}
	var r R
	if err := json.Unmarshal(*c.raw, &r); err != nil {
		return zero, rpc.Errorf(rpc.CodeInternal, "unexpected %s result: %v", m.Name, err)
	}
	return r, nil
}

// KeepRaw returns a copy of c whose typed calls also store each result,
// as the daemon sent it, in *dst: members this client does not know pass
// through unchanged to a front-end that prints the answer (dlgt's JSON
// output). The copy shares c's connection directory: close c, not it.
func (c *Client) KeepRaw(dst *json.RawMessage) *Client {
	cc := *c
	cc.raw = dst
	return &cc
}

// SessionCreate launches a harness in a new Session and submits its
// first prompt (session.create). ResolveLaunch fills the launch fields as
// every dlgt front-end does; Launch creates on the host it resolved.
func (c *Client) SessionCreate(ctx context.Context, p rpc.SessionCreateParams) (rpc.Receipt, error) {
	return call(ctx, c, rpc.SessionCreate, "", p)
}

// SessionSend submits a prompt to an idle Session (session.send), routed
// to the daemon that holds it.
func (c *Client) SessionSend(ctx context.Context, p rpc.SessionSendParams) (rpc.Receipt, error) {
	return call(ctx, c, rpc.SessionSend, p.Session, p)
}

// SessionSteer types prompt into the execution running on Session ref
// now (session.send steer), reading which one that is first. With none
// running it names the last one, so that a retry of the same request_id
// after the steered execution ended replays its receipt, and anything
// else gets the daemon's INVALID_ARGUMENT (field steer.execution_seq),
// nothing typed. Only harnesses with capabilities.steering take a steer;
// the others refuse it (field steer) and nothing is typed.
func (c *Client) SessionSteer(ctx context.Context, ref, prompt, requestID string) (rpc.Receipt, error) {
	rd, err := c.SessionRead(ctx, rpc.SessionReadParams{Session: ref})
	if err != nil {
		return rpc.Receipt{}, err
	}
	return c.SessionSend(ctx, SteerParams(ref, rd, prompt, requestID))
}

// SteerParams are the session.send parameters (to Session ref) of a steer of the
// execution rd shows running (or, with none, of its last one).
func SteerParams(ref string, rd rpc.SessionReadResult, prompt, requestID string) rpc.SessionSendParams {
	seq := rd.Session.ActiveExecution
	if seq == 0 && rd.Result != nil {
		seq = rd.Result.ExecutionSeq
	}
	if seq == 0 {
		seq = 1
	}
	return rpc.SessionSendParams{Session: ref, Prompt: prompt, RequestID: requestID, Steer: &rpc.SteerOption{ExecutionSeq: seq}}
}

// SessionQueue submits prompt to run after the execution running on
// Session ref (session.send queue): the receipt (queued:true) names the
// execution it becomes, and its cursor waits for that one's result. On
// an idle Session it is a plain send.
func (c *Client) SessionQueue(ctx context.Context, ref, prompt, requestID string) (rpc.Receipt, error) {
	return c.SessionSend(ctx, rpc.SessionSendParams{Session: ref, Prompt: prompt, RequestID: requestID, Queue: true})
}

// SessionRestart relaunches a Session's harness (session.restart).
func (c *Client) SessionRestart(ctx context.Context, p rpc.SessionRestartParams) (rpc.SessionResult, error) {
	return call(ctx, c, rpc.SessionRestart, p.Session, p)
}

// SessionFetch reads what is new since a cursor, long-polling with
// WaitMS (session.fetch). WaitResult loops it until a result.
func (c *Client) SessionFetch(ctx context.Context, p rpc.SessionFetchParams) (rpc.FetchDocument, error) {
	return call(ctx, c, rpc.SessionFetch, p.Session, p)
}

// SessionCancel interrupts a Session's running execution (session.cancel).
func (c *Client) SessionCancel(ctx context.Context, p rpc.SessionCancelParams) (rpc.SessionResult, error) {
	return call(ctx, c, rpc.SessionCancel, p.Session, p)
}

// SessionRespond answers the request a blocked Session is waiting on
// (session.respond): allow or deny a tool permission. Repeating a
// request_id with the same params replays the first answer.
func (c *Client) SessionRespond(ctx context.Context, p rpc.SessionRespondParams) (rpc.SessionRespondResult, error) {
	return call(ctx, c, rpc.SessionRespond, p.Session, p)
}

// SessionList lists the daemon's Sessions (session.list).
func (c *Client) SessionList(ctx context.Context, p rpc.SessionListParams) (rpc.SessionListResult, error) {
	return call(ctx, c, rpc.SessionList, "", p)
}

// SessionRead reads a Session's state and latest result (session.read).
func (c *Client) SessionRead(ctx context.Context, p rpc.SessionReadParams) (rpc.SessionReadResult, error) {
	return call(ctx, c, rpc.SessionRead, p.Session, p)
}

// SessionStop stops a Session's harness (session.stop).
func (c *Client) SessionStop(ctx context.Context, p rpc.SessionStopParams) (rpc.SessionResult, error) {
	return call(ctx, c, rpc.SessionStop, p.Session, p)
}

// SessionDiff returns a worktree Session's diff against its base commit,
// bounded by MaxBytes (session.diff, an extension).
func (c *Client) SessionDiff(ctx context.Context, p rpc.SessionDiffParams) (rpc.SessionDiffResult, error) {
	return call(ctx, c, rpc.SessionDiff, p.Session, p)
}

// SessionWarm keeps p.Spares harness processes of a launch shape started
// ahead on the daemon (session.warm, an extension).
func (c *Client) SessionWarm(ctx context.Context, p rpc.SessionWarmParams) (rpc.SessionWarmResult, error) {
	return call(ctx, c, rpc.SessionWarm, "", p)
}

// EventRead reads lifecycle events after a seq (event.read; at most
// 1,000 a call).
func (c *Client) EventRead(ctx context.Context, p rpc.EventReadParams) ([]rpc.Event, error) {
	return call(ctx, c, rpc.EventRead, p.Session, p)
}

// EventSubscribe follows lifecycle events (event.subscribe) on a
// connection of its own: each event is yielded as it is recorded. A
// failure to subscribe or a broken connection is yielded once as the
// error, and the sequence ends; ctx ending (or the caller breaking out)
// ends it cleanly, with no error. It dials when iterated, every time.
func (c *Client) EventSubscribe(ctx context.Context, p rpc.EventReadParams) iter.Seq2[rpc.Event, error] {
	return c.EventFollow(ctx, p, nil)
}

// EventFollow is EventSubscribe that also hands the subscription's ack
// (where its events start: after, and tool_after with tool_calls) to
// onAck, when not nil, before the first event.
func (c *Client) EventFollow(ctx context.Context, p rpc.EventReadParams, onAck func(rpc.SubscribeAck)) iter.Seq2[rpc.Event, error] {
	return func(yield func(rpc.Event, error) bool) {
		rc, err := c.Dial(ctx, p.Session)
		if err != nil {
			if ctx.Err() == nil {
				yield(rpc.Event{}, err)
			}
			return
		}
		defer rc.Close()
		ack, next, err := rc.Subscribe(ctx, rpc.EventSubscribe.Name, p)
		if err != nil {
			if ctx.Err() == nil {
				yield(rpc.Event{}, err)
			}
			return
		}
		if onAck != nil {
			var a rpc.SubscribeAck
			if err := json.Unmarshal(ack, &a); err != nil {
				yield(rpc.Event{}, rpc.Errorf(rpc.CodeInternal, "unexpected subscription ack from the daemon: %v", err))
				return
			}
			onAck(a)
		}
		for {
			line, err := next()
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
					yield(rpc.Event{}, err)
				}
				return
			}
			var ev rpc.Event
			if err := json.Unmarshal(line, &ev); err != nil {
				yield(rpc.Event{}, rpc.Errorf(rpc.CodeInternal, "unexpected event line from the daemon: %v", err))
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// ScrollbackRead reads rendered screen rows (scrollback.read).
func (c *Client) ScrollbackRead(ctx context.Context, p rpc.ScrollbackReadParams) (rpc.ScrollbackPage, error) {
	return call(ctx, c, rpc.ScrollbackRead, p.Session, p)
}

// TranscriptReadRaw reads a page of the raw PTY log (transcript.read_raw).
func (c *Client) TranscriptReadRaw(ctx context.Context, p rpc.TranscriptReadRawParams) (rpc.RawPage, error) {
	return call(ctx, c, rpc.TranscriptReadRaw, p.Session, p)
}

// ModelList lists a harness's models (model.list).
func (c *Client) ModelList(ctx context.Context, p rpc.ModelListParams) (rpc.ModelListResult, error) {
	return call(ctx, c, rpc.ModelList, "", p)
}

// HarnessList reads the harnesses' availability and capabilities
// (harness.list), as a create from this client would find them: without
// p.Environment it sends this client's launch environment
// (LaunchEnvironment; for another machine, none, and the remote side
// fills in its own).
func (c *Client) HarnessList(ctx context.Context, p rpc.HarnessListParams) (rpc.HarnessListResult, error) {
	if p.Environment == nil {
		p.Environment = c.LaunchEnvironment()
	}
	return call(ctx, c, rpc.HarnessList, "", p)
}

// ProfileList lists the launch profiles (profile.list). Profiles are
// client-side configuration: it is answered here from the profiles file
// (LoadProfiles) without dialing, as the stdio proxy answers it; the
// daemon refuses the method. Environment values are never listed, only
// their names.
func (c *Client) ProfileList(ctx context.Context, _ rpc.ProfileListParams) (rpc.ProfileListResult, error) {
	profiles, err := c.LoadProfiles()
	if err != nil {
		return rpc.ProfileListResult{}, err
	}
	return profiles.List(), nil
}

// DaemonStatus reports this machine's daemon of the Client's version
// without starting one. With none running (no socket, or nobody listening
// on it) st is nil and err is nil; socket is the socket tried either way.
func (c *Client) DaemonStatus(ctx context.Context) (st *rpc.DaemonStatus, socket string, err error) {
	rc, sock, err := c.dialRunning(ctx)
	if err != nil || rc == nil {
		return nil, sock, err
	}
	defer rc.Close()
	s, err := rpc.DaemonStatusMethod.Call(ctx, rc, struct{}{})
	if err != nil {
		return nil, sock, err
	}
	return &s, sock, nil
}

// DaemonStop asks this machine's daemon to shut down, then waits (at most
// wait) for its socket to go, so a stop followed by a start never races.
// stopped is false when the socket was still there. With no daemon
// running it is RPC_UNAVAILABLE.
func (c *Client) DaemonStop(ctx context.Context, wait time.Duration) (stopped bool, err error) {
	rc, sock, err := c.dialRunning(ctx)
	if err != nil {
		return false, err
	}
	if rc == nil {
		return false, &rpc.Error{Code: rpc.CodeRPCUnavailable, Message: fmt.Sprintf("no daemon is running (socket %s); nothing to stop", sock)}
	}
	defer rc.Close()
	if _, err := rpc.DaemonShutdownMethod.Call(ctx, rc, struct{}{}); err != nil {
		return false, err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for wctx.Err() == nil {
		if _, err := os.Stat(sock); errors.Is(err, os.ErrNotExist) {
			return true, nil
		}
		select {
		case <-wctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false, nil
}

// Call makes one call of any method by name, on a fresh connection to
// the daemon the policy names for ref (the Session the call addresses, ""
// for none), and decodes its result into result (nil discards it; a
// *json.RawMessage keeps the daemon's answer byte for byte). It is for a
// front-end that passes answers through unchanged, members this client
// does not know included (dlgt's JSON output); the typed methods are the
// way otherwise.
func (c *Client) Call(ctx context.Context, method, ref string, params, result any) error {
	rc, err := c.Dial(ctx, ref)
	if err != nil {
		return err
	}
	defer rc.Close()
	stop := context.AfterFunc(ctx, func() { rc.Close() })
	defer stop()
	return rc.Call(ctx, method, params, result)
}

// Probe is what ProbeDaemon found on this machine's socket of the
// Client's version.
type Probe struct {
	// Socket is the socket probed.
	Socket string
	// DialErr is why nothing accepted the connection (nil when something
	// did): RPC_UNAVAILABLE naming the socket and wrapping the system
	// error (syscall.ENOENT: no socket; ECONNREFUSED: a socket nobody
	// listens on; EACCES or EPERM: refused, with the way out).
	DialErr error
	// Status is the daemon's answer to daemon.status; StatusErr is why
	// whatever accepted the connection gave none.
	Status    *rpc.DaemonStatus
	StatusErr error
}

// ProbeDaemon connects to this machine's socket of the Client's version
// (never another machine, never routed, never started) and asks it for
// its status: a diagnosis of what answers there (dlgt doctor). The error
// is an unusable state directory; everything else is in the Probe.
func (c *Client) ProbeDaemon(ctx context.Context) (Probe, error) {
	p, err := c.Paths()
	if err != nil {
		return Probe{}, err
	}
	pr := Probe{Socket: p.Socket}
	nc, err := dialSocket(ctx, p.Socket)
	if err != nil {
		pr.DialErr = err
		return pr, nil
	}
	rc := rpc.NewClient(nc)
	defer rc.Close()
	st, err := rpc.DaemonStatusMethod.Call(ctx, rc, struct{}{})
	if err != nil {
		pr.StatusErr = err
		return pr, nil
	}
	pr.Status = &st
	return pr, nil
}

// HostSessions is one host's answer to SessionLists.
type HostSessions struct {
	// Host is the host as given ("local" is this machine).
	Host string
	// Sessions are its Sessions as its daemon sent them (members this
	// client does not know included); nil when Err is set.
	Sessions []json.RawMessage
	// Err is why the host gave no list: RPC_UNAVAILABLE naming it when it
	// cannot be reached, else its daemon's error.
	Err *rpc.Error
}

// SessionLists lists the Sessions of several machines at once
// (session.list on each, concurrently; "local" is this machine), in the
// order given: a host that cannot be reached is its Err and hides none of
// the others. A malformed host is INVALID_ARGUMENT before any is asked.
func (c *Client) SessionLists(ctx context.Context, hosts []string, p rpc.SessionListParams) ([]HostSessions, error) {
	clients := make([]*Client, len(hosts))
	for i, h := range hosts {
		if h != "local" {
			if err := CheckHost(h); err != nil {
				return nil, err
			}
		}
		clients[i], _ = c.WithHost(h)
	}
	out := make([]HostSessions, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].Host = h
			var res struct {
				Sessions []json.RawMessage `json:"sessions"`
			}
			var raw json.RawMessage
			if err := clients[i].Call(ctx, rpc.MethodSessionList, "", p, &raw); err != nil {
				out[i].Err = rpc.AsError(err)
			} else if err := json.Unmarshal(raw, &res); err != nil {
				out[i].Err = rpc.Errorf(rpc.CodeInternal, "unexpected session.list result: %v", err)
			} else {
				out[i].Sessions = res.Sessions
			}
		}()
	}
	wg.Wait()
	return out, nil
}

// Tagged is h's Sessions as sent, each with a "host" member naming h (a
// Session that is not a JSON object is left out).
func (h HostSessions) Tagged() []json.RawMessage {
	var out []json.RawMessage
	for _, s := range h.Sessions {
		var m map[string]json.RawMessage
		if json.Unmarshal(s, &m) != nil {
			continue
		}
		m["host"], _ = json.Marshal(h.Host)
		b, _ := json.Marshal(m)
		out = append(out, b)
	}
	return out
}
