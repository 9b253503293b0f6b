package daemon

import "io"

// pumpChunk sizes one PTY read; a read returns at most a few KiB anyway.
const pumpChunk = 16 << 10

// pumpOutput reads r until an error (io.EOF at the end) and hands every
// chunk, in order, to consume, which must be done with it before it
// returns. The daemon's PTY pump and the ingest benchmark both use it, so
// the benchmark measures the daemon's own path. (A read-ahead ring that
// overlapped reading with consuming measured no faster on the ingest
// benchmark, so the loop stays simple.)
func pumpOutput(r io.Reader, buf []byte, consume func([]byte)) error {
	for {
		n, err := r.Read(buf)
		if n > 0 {
			consume(buf[:n])
		}
		if err != nil {
			return err
		}
	}
}
