package vt

import (
	"github.com/dlgt-dev/dlgt/vt/vttest"
)

// ingestStream is the shared benchmark stream (see vttest.IngestStream).
func ingestStream(size int) []byte { return vttest.IngestStream(size) }
