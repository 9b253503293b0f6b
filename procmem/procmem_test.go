package procmem

import (
	"os"
	"testing"
)

func TestOfSelf(t *testing.T) {
	ballast := make([]byte, 32<<20)
	for i := range ballast {
		ballast[i] = 1 // touched, so resident
	}
	rss, hwm, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss < 32<<10 || hwm < rss {
		t.Fatalf("rss %d KiB, peak %d KiB: want rss >= 32 MiB and peak >= rss", rss, hwm)
	}
	_ = ballast[len(ballast)-1]
	if _, _, err := Of(-1); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}
