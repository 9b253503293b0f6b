package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dlgt/rpc"
)

// waiterConns is how many connections carry the long polls: the daemon
// accepts rpc.DefaultMaxConnections at once and the control client holds
// one.
const waiterConns = rpc.DefaultMaxConnections - 1

// pipe is a raw connection carrying many requests in flight (the
// protocol allows rpc.DefaultMaxInFlight per connection; rpc.Client
// serialises its calls, so the long polls are written by hand).
type pipe struct {
	nc net.Conn
	br *bufio.Reader
	mu sync.Mutex // serialises writes
}

func dialPipe(socket string) (*pipe, error) {
	var last error
	for try := 0; try < 500; try++ {
		nc, err := net.Dial("unix", socket)
		if err != nil {
			last = err
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p := &pipe{nc: nc, br: bufio.NewReaderSize(nc, 1<<20)}
		// A connection over the cap is refused on its first request.
		if err := p.write(`{"id":"probe","method":"` + rpc.MethodDaemonStatus + `","params":{}}` + "\n"); err == nil {
			line, err := p.br.ReadBytes('\n')
			if err == nil && rpc.DecodeResponse(line, nil) == nil {
				return p, nil
			}
			last = fmt.Errorf("%v %s", err, line)
		}
		nc.Close()
		time.Sleep(10 * time.Millisecond)
	}
	return nil, fmt.Errorf("dial %s: %v", socket, last)
}

func (p *pipe) write(s string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.nc.Write([]byte(s))
	return err
}

// fetchLine is a long poll for the result after cursor, request id "w<w>".
func fetchLine(w int, session, cursor string) string {
	params, _ := json.Marshal(map[string]any{"session": session, "cursor": cursor, "until": "result", "wait_ms": 30000, "max_bytes": 4096})
	return `{"id":"w` + strconv.Itoa(w) + `","method":"session.fetch","params":` + string(params) + "}\n"
}

// waiters measures the Stop hook → fetch answered path with 1 and with
// 1,000 long polls parked on the same Session's result, alternating.
func (b *bench) waiters(c *conn) error {
	rounds := b.opts.waiterRounds
	fmt.Printf("Stop hook → fetch answered, 1 and 1,000 waiters over %d connections, %d rounds alternating:\n", waiterConns, rounds)
	id, err := b.create(c, "waiters", nil)
	if err != nil {
		return err
	}
	pipes := make([]*pipe, waiterConns)
	for i := range pipes {
		if pipes[i], err = dialPipe(b.socket); err != nil {
			return err
		}
		defer pipes[i].nc.Close()
	}
	lat := map[int][]time.Duration{}
	for r := 0; r < rounds; r++ {
		for _, n := range []int{1, 1000} {
			d, err := b.waitRound(c, id, pipes, n, r)
			if err != nil {
				return fmt.Errorf("%d waiters, round %d: %w", n, r, err)
			}
			lat[n] = append(lat[n], d...)
		}
	}
	for _, n := range []int{1, 1000} {
		fmt.Printf("  %-40s %s\n", fmt.Sprintf("Stop hook started → fetch answered (%d)", n), stats(lat[n]))
	}
	b.summarise("Stop hook → fetch answered, 1,000 waiters (p50/p99 over waiters and rounds)", medP99(lat[1000]),
		"1 waiter, same rounds "+medP99(lat[1]), ratio(float64(quantile(lat[1000], 0.99)), float64(quantile(lat[1], 0.99)))+" (p99)", "p99 < 8 ms")
	return b.stopSession(c, id)
}

// waitRound starts a 1 s turn, parks n long polls on its result spread
// over pipes, and returns each waiter's time from the Stop hook's stamp
// to its answer read.
func (b *bench) waitRound(c *conn, id string, pipes []*pipe, n, r int) ([]time.Duration, error) {
	b.seq++
	var rw rpc.Receipt
	err := c.call(rpc.MethodSessionSend, rpc.SessionSendParams{
		Session: id, Prompt: fmt.Sprintf("[[slow 1000]] waiters %d %d", n, r), RequestID: fmt.Sprintf("bench-waiters-%d-%d", os.Getpid(), b.seq),
	}, &rw)
	if err != nil || rw.Submission != rpc.SubmissionConfirmed {
		return nil, fmt.Errorf("send: %v %+v", err, rw)
	}
	answered := make([]time.Time, n)
	var (
		wg      sync.WaitGroup
		errMu   sync.Mutex
		firstEr error
	)
	fail := func(err error) {
		errMu.Lock()
		if firstEr == nil {
			firstEr = err
		}
		errMu.Unlock()
	}
	share := make([]int, len(pipes))
	var batch = make([]strings.Builder, len(pipes))
	for w := 0; w < n; w++ {
		share[w%len(pipes)]++
		batch[w%len(pipes)].WriteString(fetchLine(w, id, rw.Cursor))
	}
	type stamped struct {
		line []byte
		at   time.Time
	}
	for i, p := range pipes {
		if share[i] == 0 {
			continue
		}
		lines := make(chan stamped, share[i]+64)
		var left atomic.Int64 // waiters of this pipe not answered yet
		left.Store(int64(share[i]))
		wg.Add(2)
		// The reader only stamps and copies, so a later line on the
		// same connection does not wait for an earlier one's decoding.
		// The decoder ends it with a read deadline once every waiter of
		// the pipe is answered.
		p.nc.SetReadDeadline(time.Now().Add(60 * time.Second))
		go func() {
			defer wg.Done()
			defer close(lines)
			for {
				line, err := p.br.ReadSlice('\n')
				at := time.Now()
				if err != nil {
					if left.Load() > 0 {
						fail(fmt.Errorf("read: %w", err))
					}
					return
				}
				lines <- stamped{append([]byte(nil), line...), at}
			}
		}()
		go func() {
			defer wg.Done()
			done := func() {
				if left.Add(-1) == 0 {
					p.nc.SetReadDeadline(time.Now())
				}
			}
			for l := range lines {
				var resp struct {
					ID     string `json:"id"`
					Result *struct {
						Cursor   string `json:"cursor"`
						Sessions []struct {
							Results []json.RawMessage `json:"results"`
						} `json:"sessions"`
					} `json:"result"`
					Error *rpc.Error `json:"error"`
				}
				if err := json.Unmarshal(l.line, &resp); err != nil {
					fail(fmt.Errorf("response %q: %w", l.line, err))
					done()
					continue
				}
				w, err := strconv.Atoi(strings.TrimPrefix(resp.ID, "w"))
				if err != nil || w < 0 || w >= n {
					fail(fmt.Errorf("response id %q: %s", resp.ID, l.line))
					done()
					continue
				}
				switch {
				case resp.Error != nil:
					fail(resp.Error)
					done()
				case resp.Result == nil:
					fail(fmt.Errorf("response %q", l.line))
					done()
				case len(resp.Result.Sessions) == 1 && len(resp.Result.Sessions[0].Results) > 0:
					answered[w] = l.at
					done()
				default:
					// Woken by something else than the result: poll on.
					if err := p.write(fetchLine(w, id, resp.Result.Cursor)); err != nil {
						fail(err)
					}
				}
			}
		}()
	}
	for i, p := range pipes {
		if share[i] > 0 {
			if err := p.write(batch[i].String()); err != nil {
				return nil, err
			}
		}
	}
	parked := time.Now()
	wg.Wait()
	if firstEr != nil {
		return nil, firstEr
	}
	stop, ok := lastStamp(b.stamps, "Stop")
	if !ok || stop.Before(parked) {
		return nil, fmt.Errorf("the Stop hook (%v) came before every long poll was written (%v): lengthen the turn", stop, parked)
	}
	out := make([]time.Duration, n)
	for w, at := range answered {
		if at.IsZero() {
			return nil, fmt.Errorf("waiter %d not answered", w)
		}
		out[w] = at.Sub(stop)
	}
	return out, nil
}
