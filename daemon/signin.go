package daemon

import (
	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// signInCheck is LAUNCH_FAILED with the harness's hint when its sign-in
// state, read from the launch environment and files before anything
// starts (harness.SignInChecker: Gemini CLI), says it would stop at a
// sign-in screen; the same hint its Prepare fails a create with. A warm
// spare's launch failing that way is only logged (spares start in the
// background), so session.warm asks first: a front-end that warms ahead
// (dlgt acp's session/new) learns it at once.
func signInCheck(h harness.Harness, env map[string]string, cwd string) error {
	sc, ok := h.(harness.SignInChecker)
	if !ok {
		return nil
	}
	if why := sc.SignInProblem(func(k string) string { return env[k] }, cwd); why != "" {
		return rpc.Errorf(rpc.CodeLaunchFailed, "%s", why)
	}
	return nil
}
