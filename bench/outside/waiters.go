package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
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
	lat, latSent := map[int][]time.Duration{}, map[int][]time.Duration{}
	stopPerf := b.perf("waiters")
	defer stopPerf()
	for r := 0; r < rounds; r++ {
		for _, n := range []int{1, 1000} {
			d, ds, err := b.waitRound(c, id, pipes, n, r)
			if err != nil {
				return fmt.Errorf("%d waiters, round %d: %w", n, r, err)
			}
			lat[n], latSent[n] = append(lat[n], d...), append(latSent[n], ds...)
		}
	}
	stopPerf()
	for _, n := range []int{1, 1000} {
		fmt.Printf("  %-40s %s\n", fmt.Sprintf("Stop hook started → fetch answered (%d)", n), stats(lat[n]))
		fmt.Printf("  %-40s %s\n", "  from the hook's line sent", stats(latSent[n]))
	}
	if b.waiterLines > 0 {
		fmt.Printf("  each answer a line of %d bytes on average; a round's 1,000 answers over %d connections\n", b.waiterBytes/b.waiterLines, waiterConns)
	}
	b.summarise("Stop hook → fetch answered, 1,000 waiters (p50/p99 over waiters and rounds)", medP99(lat[1000])+"; from the line sent "+medP99(latSent[1000]),
		"1 waiter, same rounds "+medP99(lat[1])+"; from the line sent "+medP99(latSent[1]), ratio(float64(quantile(lat[1000], 0.99)), float64(quantile(lat[1], 0.99)))+" (p99)",
		verdict(quantile(lat[1000], 0.99) < 8*time.Millisecond, "p99 < 8 ms")+"; from the line sent: "+verdict(quantile(latSent[1000], 0.99) < 8*time.Millisecond, "p99 < 8 ms"))
	return b.stopSession(c, id)
}

// waitRound starts a 1 s turn, parks n long polls on its result spread
// over pipes, and returns each waiter's time from the Stop hook's stamp
// to its answer read, and from the forwarder's line sent (the
// "Stop-sent" stamp) to its answer.
func (b *bench) waitRound(c *conn, id string, pipes []*pipe, n, r int) (fromStart, fromSent []time.Duration, err error) {
	b.seq++
	var rw rpc.Receipt
	err = c.call(rpc.MethodSessionSend, rpc.SessionSendParams{
		Session: id, Prompt: fmt.Sprintf("[[slow 1000]] waiters %d %d", n, r), RequestID: fmt.Sprintf("bench-waiters-%d-%d", os.Getpid(), b.seq),
	}, &rw)
	if err != nil || rw.Submission != rpc.SubmissionConfirmed {
		return nil, nil, fmt.Errorf("send: %v %+v", err, rw)
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
	// Each pipe's reader only stamps each line and looks for the result
	// in it (a byte search), so the client's own JSON decoding does not
	// compete with the daemon for the CPU during the fan-out; the lines
	// are decoded and checked after the round. A response without the
	// result (a wake-up for something else) is decoded at once and its
	// long poll sent again.
	type stamped struct {
		line []byte
		at   time.Time
	}
	got := make([][]stamped, len(pipes))
	for i, p := range pipes {
		if share[i] == 0 {
			continue
		}
		p.nc.SetReadDeadline(time.Now().Add(60 * time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left := share[i]; left > 0; {
				line, err := p.br.ReadSlice('\n')
				at := time.Now()
				if err != nil {
					fail(fmt.Errorf("read: %w", err))
					return
				}
				if bytes.Contains(line, []byte(`"results":[{`)) || !bytes.Contains(line, []byte(`"result":`)) {
					got[i] = append(got[i], stamped{append([]byte(nil), line...), at})
					left--
					continue
				}
				var resp struct {
					ID     string `json:"id"`
					Result struct {
						Cursor string `json:"cursor"`
					} `json:"result"`
				}
				w, err := -1, json.Unmarshal(line, &resp)
				if err == nil {
					w, err = strconv.Atoi(strings.TrimPrefix(resp.ID, "w"))
				}
				if err != nil || w < 0 || w >= n {
					fail(fmt.Errorf("response %q: %v", line, err))
					return
				}
				if err := p.write(fetchLine(w, id, resp.Result.Cursor)); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	for i, p := range pipes {
		if share[i] > 0 {
			if err := p.write(batch[i].String()); err != nil {
				return nil, nil, err
			}
		}
	}
	parked := time.Now()
	wg.Wait()
	if firstEr != nil {
		return nil, nil, firstEr
	}
	for _, lines := range got {
		for _, l := range lines {
			var resp struct {
				ID     string `json:"id"`
				Result *struct {
					Sessions []struct {
						Results []json.RawMessage `json:"results"`
					} `json:"sessions"`
				} `json:"result"`
				Error *rpc.Error `json:"error"`
			}
			if err := json.Unmarshal(l.line, &resp); err != nil {
				return nil, nil, fmt.Errorf("response %q: %w", l.line, err)
			}
			if resp.Error != nil {
				return nil, nil, resp.Error
			}
			w, err := strconv.Atoi(strings.TrimPrefix(resp.ID, "w"))
			if err != nil || w < 0 || w >= n || resp.Result == nil || len(resp.Result.Sessions) != 1 || len(resp.Result.Sessions[0].Results) == 0 {
				return nil, nil, fmt.Errorf("response %q", l.line)
			}
			answered[w] = l.at
			b.waiterBytes += len(l.line)
			b.waiterLines++
		}
	}
	stop, ok := lastStamp(b.stamps, "Stop")
	if !ok || stop.Before(parked) {
		return nil, nil, fmt.Errorf("the Stop hook (%v) came before every long poll was written (%v): lengthen the turn", stop, parked)
	}
	sent, ok := awaitStamp(b.stamps, "Stop-sent", stop)
	if !ok {
		return nil, nil, fmt.Errorf("no Stop-sent stamp after the Stop stamp (%v, %v)", stop, sent)
	}
	fromStart, fromSent = make([]time.Duration, n), make([]time.Duration, n)
	for w, at := range answered {
		if at.IsZero() {
			return nil, nil, fmt.Errorf("waiter %d not answered", w)
		}
		fromStart[w], fromSent[w] = at.Sub(stop), at.Sub(sent)
	}
	return fromStart, fromSent, nil
}
