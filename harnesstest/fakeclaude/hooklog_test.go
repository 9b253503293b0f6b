package fakeclaude_test

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// Hooks that run at once (the PermissionRequest hook and the
// Notification the dialog raises meanwhile) each leave their whole line
// in the hook log: none is cut into another's, which the log's reader
// would skip as a line still being written.
func TestHookLogConcurrentAppends(t *testing.T) {
	w := newWorld(t)
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", 48<<10))
			cmd := exec.Command(w.hookArgv[0], append(w.hookArgv[1:], fmt.Sprintf("Event%d", i))...)
			cmd.Stdin = strings.NewReader(payload)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("hook %d: %v\n%s", i, err, out)
			}
		}()
	}
	wg.Wait()
	if got := len(w.events()); got != n {
		t.Fatalf("%d whole lines in the hook log, want %d: %v", got, n, names(w.events()))
	}
}
