package daemon

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"time"
)

// pumpOutput hands every byte over, in order, with short reads and a slow
// consumer, and ends with the reader's error.
func TestPumpOutputOrderAndCompleteness(t *testing.T) {
	var src bytes.Buffer
	for i := 0; src.Len() < 1<<20; i++ {
		src.WriteString(time.Duration(i).String())
	}
	want := append([]byte(nil), src.Bytes()...)
	var got bytes.Buffer
	n := 0
	err := pumpOutput(iotest.HalfReader(&src), make([]byte, 1000), func(c []byte) {
		n++
		if n%50 == 0 {
			time.Sleep(time.Millisecond) // a slow consumer
		}
		got.Write(c)
	})
	if !errors.Is(err, io.EOF) {
		t.Fatalf("err = %v", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("got %d bytes, want %d (or reordered)", got.Len(), len(want))
	}
}
