package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// GeminiSignInProblem follows Gemini CLI 0.61.0's own choice: the TUI signs
// in only with the method in its merged settings (the environment alone
// picks none, but for Cloud Shell and compute ADC); Google needs a saved
// sign-in or a credentials file, Vertex AI its variables; anything dlgt
// cannot judge (an external sign-in, a stored API key, a settings file it
// cannot parse) is left to Gemini's own screen.
func TestGeminiSignInProblem(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings string            // ~/.gemini/settings.json; "" none
		files    map[string]string // more files under HOME
		env      map[string]string
		want     string // a phrase of the hint; "" no problem
	}{
		{"fresh home", "", nil, nil, "not signed in"},
		{"api key in the environment, nothing chosen", "", nil, map[string]string{"GEMINI_API_KEY": "k"}, "not signed in"},
		{"vertex variables, nothing chosen", "", nil, map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_API_KEY": "k"}, "not signed in"},
		{"cloud shell", "", nil, map[string]string{"CLOUD_SHELL": "true"}, ""},
		{"compute ADC from a .env file", "", map[string]string{".env": "GEMINI_CLI_USE_COMPUTE_ADC=true\n"}, nil, ""},
		{"empty settings", "{}", nil, nil, "not signed in"},
		{"api key chosen", `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`, nil, nil, ""},
		{"older settings format", `{"selectedAuthType":"gemini-api-key"}`, nil, nil, ""},
		{"comments", "// mine\n{\"security\":{\"auth\":{\"selectedType\":\"gemini-api-key\"}}}", nil, nil, ""},
		{"google, no saved sign-in", `{"security":{"auth":{"selectedType":"oauth-personal"}}}`, nil, nil, "sign in with Google"},
		{"google, saved", `{"security":{"auth":{"selectedType":"oauth-personal"}}}`, map[string]string{".gemini/oauth_creds.json": "{}"}, nil, ""},
		{"google, credentials file", `{"security":{"auth":{"selectedType":"oauth-personal"}}}`, nil, map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": "/x.json"}, ""},
		{"vertex, nothing set", `{"security":{"auth":{"selectedType":"vertex-ai"}}}`, nil, nil, "GOOGLE_CLOUD_LOCATION"},
		{"vertex, project only", `{"security":{"auth":{"selectedType":"vertex-ai"}}}`, nil, map[string]string{"GOOGLE_CLOUD_PROJECT": "p"}, "GOOGLE_CLOUD_LOCATION"},
		{"vertex, project and location in ~/.gemini/.env", `{"security":{"auth":{"selectedType":"vertex-ai"}}}`, map[string]string{".gemini/.env": "export GOOGLE_CLOUD_PROJECT=p\nGOOGLE_CLOUD_LOCATION='us'\n"}, nil, ""},
		{"vertex, express key", `{"security":{"auth":{"selectedType":"vertex-ai"}}}`, nil, map[string]string{"GOOGLE_API_KEY": "k"}, ""},
		{"external sign-in", `{"security":{"auth":{"useExternal":true}}}`, nil, nil, ""},
		{"settings that do not parse", `{"security":`, nil, nil, ""},
		{"an unknown method", `{"security":{"auth":{"selectedType":"something-new"}}}`, nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, cwd := t.TempDir(), t.TempDir()
			env := map[string]string{"HOME": home, "GEMINI_CLI_SYSTEM_SETTINGS_PATH": filepath.Join(t.TempDir(), "settings.json")}
			for k, v := range tc.env {
				env[k] = v
			}
			files := map[string]string{}
			for k, v := range tc.files {
				files[k] = v
			}
			if tc.settings != "" {
				files[".gemini/settings.json"] = tc.settings
			}
			for name, data := range files {
				p := filepath.Join(home, name)
				os.MkdirAll(filepath.Dir(p), 0o700)
				if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got := GeminiSignInProblem(func(k string) string { return env[k] }, cwd)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if got != "" && (!strings.Contains(got, "`gemini`") || !strings.Contains(got, "GEMINI_API_KEY")) {
				t.Errorf("the hint names neither `gemini` nor GEMINI_API_KEY: %q", got)
			}
		})
	}
	// The workspace's settings choose too, and a system settings file
	// overrides the user's.
	home, cwd, sys := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "settings.json")
	os.MkdirAll(filepath.Join(cwd, ".gemini"), 0o700)
	os.WriteFile(filepath.Join(cwd, ".gemini", "settings.json"), []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}}}`), 0o600)
	env := map[string]string{"HOME": home, "GEMINI_CLI_SYSTEM_SETTINGS_PATH": sys}
	if got := GeminiSignInProblem(func(k string) string { return env[k] }, cwd); got != "" {
		t.Errorf("chosen in the workspace: %q", got)
	}
	os.WriteFile(sys, []byte(`{"security":{"auth":{"selectedType":"oauth-personal"}}}`), 0o600)
	if got := GeminiSignInProblem(func(k string) string { return env[k] }, cwd); !strings.Contains(got, "Google") {
		t.Errorf("Google chosen by the system settings: %q", got)
	}
}

// Gemini CLI's sign-in screens, as the pinned CLI draws them, stop a
// launch at once (BlockingLaunchHint); its idle screen and its tips do not.
func TestGeminiBlockingLaunchHint(t *testing.T) {
	for rows, want := range map[string]string{
		"│   How would you like to authenticate for this project?  │":               "not signed in",
		"│ Enter Gemini API Key                                    │":               "GEMINI_API_KEY",
		"Please visit the following URL to authorize the application:":              "sign in with Google",
		"│ Logging in with Google... Restarting Gemini CLI to continue.          │": "sign in with Google",
		"Tips for getting started:|1. Create GEMINI.md files to customize":          "",
		" >   Type your message or @path/to/file":                                   "",
	} {
		got := Gemini{}.BlockingLaunchHint(strings.Split(rows, "|"))
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%q: got %q, want %q", rows, got, want)
		}
	}
}
