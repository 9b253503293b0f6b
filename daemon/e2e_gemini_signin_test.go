package daemon

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harnesstest/mockapi"
	"github.com/dlgt-dev/dlgt/rpc"
)

// TestE2EGeminiNotSignedIn: session.create with the real Gemini CLI
// (0.61.0) and no usable sign-in fails in seconds with LAUNCH_FAILED and
// a hint naming `gemini` and the variables it takes, where it used to
// wait for the startup timeout (issue: 39 s, then "exit 199"). A fresh
// HOME (nothing chosen) and Google chosen with no saved sign-in are told
// from the settings and files before anything starts; an API key chosen
// with none given, or nothing chosen with an external sign-in (which dlgt
// does not judge), is told from Gemini's own key-entry or auth screen,
// drawn before its ready hook. Each within 60 s of a 120 s startup timeout (loaded: the
// screen's case took up to 21.5 s, Gemini's own start), with nothing left
// running and no Session listed.
func TestE2EGeminiNotSignedIn(t *testing.T) {
	if testing.Short() {
		t.Skip("real CLI")
	}
	bin := e2eGeminiBin(t)
	mock := mockapi.NewGemini(t, mockapi.Script{})
	offline := mockapi.GeminiSettings() // no statistics or update check: nothing but the mock is contacted
	delete(offline, "security")
	for _, tc := range []struct {
		name     string
		auth     map[string]any // security.auth in the user's settings; nil: none
		started  bool           // Gemini is started (told from its screen)
		wantHint []string
	}{
		{"fresh-home", nil, false, []string{"Gemini CLI is not signed in", "run `gemini` once", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT"}},
		{"google-no-saved-sign-in", map[string]any{"selectedType": "oauth-personal"}, false, []string{"sign in with Google", "run `gemini` once", "oauth_creds.json", "GEMINI_API_KEY"}},
		{"api-key-none-given", map[string]any{"selectedType": "gemini-api-key"}, true, []string{"Gemini API key", "GEMINI_API_KEY", "run `gemini` once"}},
		// An external sign-in keeps dlgt from judging the settings: Gemini
		// starts and draws its auth dialog, since nothing is chosen.
		{"external-nothing-chosen", map[string]any{"useExternal": true}, true, []string{"Gemini CLI is not signed in", "run `gemini` once", "GEMINI_API_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := newE2EMark(t)
			home := t.TempDir()
			if tc.name != "fresh-home" {
				settings := map[string]any{}
				for k, v := range offline {
					settings[k] = v
				}
				settings["security"] = map[string]any{"auth": tc.auth}
				b, _ := json.Marshal(settings)
				os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
				if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			env := map[string]string{
				"PATH": os.Getenv("PATH"), "HOME": home, "DLGT_GEMINI_BIN": bin, "TERM": "xterm-256color",
				// Only the loopback mock could be reached, were a request made.
				"GOOGLE_GEMINI_BASE_URL": mock.URL(),
			}
			addMark(env, mark)
			td := startTestDaemonWith(t, env)
			no := false
			start := time.Now()
			err := td.call(rpc.MethodSessionCreate, rpc.SessionCreateParams{
				Title: "gemini not signed in", Harness: "gemini", Cwd: t.TempDir(), Prompt: "hello",
				RequestID: "gemini-signin-" + tc.name, Environment: env, AutoApprove: &no, StartupTimeoutMS: 120000,
			}, nil)
			took := time.Since(start)
			t.Logf("%s: LAUNCH_FAILED after %v: %v", tc.name, took.Round(time.Millisecond), err)
			if !errors.Is(err, rpc.ErrLaunchFailed) {
				t.Fatalf("create: %v, want LAUNCH_FAILED", err)
			}
			for _, w := range tc.wantHint {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
			if took > 60*time.Second {
				t.Errorf("the launch failed after %v, at its startup timeout rather than at once", took)
			}
			if started := strings.Contains(err.Error(), "stopped at a screen"); started != tc.started {
				t.Errorf("told from Gemini's screen = %v, want %v: %v", started, tc.started, err)
			}
			var list rpc.SessionListResult
			td.mustCall(rpc.MethodSessionList, rpc.SessionListParams{All: true}, &list)
			if len(list.Sessions) != 0 {
				t.Errorf("sessions after the failed create: %+v", list.Sessions)
			}
			if n := len(mock.Requests()); n != 0 {
				t.Errorf("the model was called %d times", n)
			}
		})
	}
}
