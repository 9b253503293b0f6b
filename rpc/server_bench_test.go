package rpc

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
)

// BenchmarkRoundTrip is one quick request answered over the socket, the
// client waiting for each answer before the next (as a poller does): the
// server's per-request work (read, parse, dispatch, encode, write) plus
// the client's (cpu-µs/op: both, from getrusage). Run with:
//
//	go test -run '^$' -bench RoundTrip -benchmem ./rpc/
func BenchmarkRoundTrip(b *testing.B) {
	type doc struct {
		Cursor  string `json:"cursor"`
		Reason  string `json:"reason"`
		Entries []int  `json:"sessions"`
	}
	h := HandlerFunc(func(ctx context.Context, peer Peer, req *Request) (any, error) {
		return &doc{Cursor: "c1", Reason: "timeout", Entries: []int{}}, nil
	})
	_, path := startServer(b, h, Limits{RateLimit: 1 << 30})
	c := dialT(b, path)
	req := `{"id":1,"method":"session.fetch","params":{"all":true,"cursor":"c1"}}` + "\n"
	c.write(req)
	var r Response
	if err := json.Unmarshal(c.readLine(), &r); err != nil || r.Error != nil {
		b.Fatalf("%+v %v", r, err)
	}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.write(req)
		c.readLine()
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := syscall.TimevalToNsec(ru1.Utime) + syscall.TimevalToNsec(ru1.Stime) -
		syscall.TimevalToNsec(ru0.Utime) - syscall.TimevalToNsec(ru0.Stime)
	b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-µs/op")
}
