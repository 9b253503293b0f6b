package main

import (
	"os"
	"testing"
	"time"
)

func TestParseRows(t *testing.T) {
	sel, err := parseRows("ingest, poll")
	if err != nil || len(sel) != 2 || !sel["ingest"] || !sel["poll"] {
		t.Fatalf("parseRows(ingest, poll) = %v, %v", sel, err)
	}
	sel, err = parseRows("all")
	if err != nil || len(sel) != len(allRows) {
		t.Fatalf("parseRows(all) = %v, %v", sel, err)
	}
	for _, bad := range []string{"", ",", "ingest,nope"} {
		if sel, err := parseRows(bad); err == nil {
			t.Errorf("parseRows(%q) = %v, want an error", bad, sel)
		}
	}
}

func TestCPUTimeOfSelf(t *testing.T) {
	pid := os.Getpid()
	before, err := cpuTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	// Spin until this process has used at least 20 ms more CPU.
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			x += i
		}
		if now, err := cpuTime(pid); err == nil && now-before >= 20*time.Millisecond {
			return
		}
	}
	t.Fatalf("cpuTime did not grow by 20 ms in 10 s of spinning (%d)", x)
}

func TestMedianAndQuantile(t *testing.T) {
	d := []time.Duration{5, 1, 4, 2, 3}
	if m := median(d); m != 3 {
		t.Errorf("median = %v, want 3", m)
	}
	if q := quantile(d, 0.99); q != 5 {
		t.Errorf("p99 = %v, want 5", q)
	}
	if m := medianF([]float64{3, 1, 2}); m != 2 {
		t.Errorf("medianF = %v, want 2", m)
	}
}

func TestVerdict(t *testing.T) {
	if got := verdict(true, "p99 < 8 ms"); got != "p99 < 8 ms: met" {
		t.Errorf("verdict(true) = %q", got)
	}
	if got := verdict(false, "p99 < 8 ms"); got != "p99 < 8 ms: missed" {
		t.Errorf("verdict(false) = %q", got)
	}
}

func TestParseCounts(t *testing.T) {
	got, err := parseCounts("64, 256")
	if err != nil || len(got) != 2 || got[0] != 64 || got[1] != 256 {
		t.Fatalf("parseCounts(64, 256) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "64,64", "256,64", "x"} {
		if got, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) = %v, want an error", bad, got)
		}
	}
}
