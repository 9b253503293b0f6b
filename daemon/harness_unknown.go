package daemon

import (
	"slices"

	"github.com/dlgt-dev/dlgt/daemon/catalog"
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// unknownHarness stands in for the adapter of a stored Session whose
// harness this daemon does not know (a record written by another build,
// or edited): such a Session is failed on load (recover) and is never
// launched; every use of the adapter answers with err.
type unknownHarness struct{ err *harness.UnknownError }

func (u unknownHarness) Name() string { return u.err.Name }
func (u unknownHarness) Info() rpc.HarnessInfo {
	return rpc.HarnessInfo{Name: u.err.Name}
}
func (u unknownHarness) Binary(map[string]string) (string, error) { return "", u.err }
func (u unknownHarness) Models(bool) rpc.ModelListResult {
	return rpc.ModelListResult{Harness: u.err.Name, Models: []rpc.Model{}}
}
func (u unknownHarness) ValidateOptions([]string) error { return u.err }
func (u unknownHarness) Prepare(harness.Spec) (*harness.Launch, error) {
	return nil, u.err
}
func (u unknownHarness) Submit(string) []harness.Keystroke { return nil }
func (u unknownHarness) Interrupt() []harness.Keystroke    { return nil }
func (u unknownHarness) DismissDialog() []harness.Keystroke {
	return nil
}
func (u unknownHarness) ParseHook(string, []byte) (harness.Evidence, error) {
	return harness.Evidence{}, u.err
}

// adapterFor is the adapter of a stored Session's harness, or an
// unknownHarness naming it and the harnesses this daemon has.
func adapterFor(c *catalog.Catalog, name string) harness.Harness {
	if h, ok := c.Lookup(name); ok {
		return h
	}
	return unknownHarness{&harness.UnknownError{Name: name, Known: slices.Clone(c.Names())}}
}

// unknownHarnessError refuses to relaunch a Session whose harness this
// daemon does not know (nil when it knows it); nothing is changed.
func unknownHarnessError(s *session) error {
	u, ok := s.h.(unknownHarness)
	if !ok {
		return nil
	}
	s.mu.Lock()
	id := s.rec.ID
	s.mu.Unlock()
	return &rpc.Error{Code: rpc.CodeSessionUnavailable, SessionID: id,
		Message: "the Session cannot be relaunched: its harness is not one this daemon has: " + u.err.Error()}
}
