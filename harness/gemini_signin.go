package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// Gemini CLI 0.61.0's sign-in, read from its code (bundle: the TUI's
// startup and useAuthCommand, validateAuthMethod, fetchCachedCredentialsList)
// and checked against the pinned CLI with an empty HOME. The TUI signs in
// only with the method chosen in its merged settings,
// security.auth.selectedType (an older settings file's top-level
// selectedAuthType is migrated to it); the environment alone never picks
// one in the TUI (only CLOUD_SHELL=true or GEMINI_CLI_USE_COMPUTE_ADC=true,
// which choose compute-default-credentials). Without a chosen method the
// TUI draws its "Get started / How would you like to authenticate" dialog
// and waits for a person, even with GEMINI_API_KEY set. With
// "oauth-personal" (Sign in with Google) and no saved Google sign-in
// (oauth_creds.json in the Gemini directory, or a credentials file in
// GOOGLE_APPLICATION_CREDENTIALS, or an access token) it starts a browser
// or user-code sign-in: "Please visit the following URL to authorize the
// application: … Enter the authorization code:", or, from its dialog,
// "Logging in with Google... Restarting Gemini CLI to continue." and exit
// 199 (its relaunch code, with no launcher to relaunch it under dlgt).
// With "vertex-ai" and none of GOOGLE_API_KEY or GOOGLE_CLOUD_PROJECT with
// GOOGLE_CLOUD_LOCATION it shows the auth dialog with the error.
//
// Gemini also loads the first .env file it finds (from the cwd up:
// .gemini/.env, .env; then ~/.gemini/.env, ~/.env) into its environment:
// a variable named in any of those files counts as set.

// geminiNotSignedIn is the hint of a Gemini CLI with no sign-in method.
const geminiNotSignedIn = "Gemini CLI is not signed in: run `gemini` once in a terminal and choose how to sign in " +
	"(Sign in with Google; Use Gemini API Key, with GEMINI_API_KEY set; or Vertex AI, with GOOGLE_GENAI_USE_VERTEXAI=true and " +
	"GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION, or GOOGLE_API_KEY): it keeps the choice in ~/.gemini/settings.json " +
	"(security.auth.selectedType), which the Sessions read"

// geminiNoGoogleSignIn is the hint of "Sign in with Google" chosen with no
// saved sign-in.
const geminiNoGoogleSignIn = "Gemini CLI is set to sign in with Google but has no saved sign-in: run `gemini` once in a " +
	"terminal and sign in (it saves ~/.gemini/oauth_creds.json), or set GOOGLE_APPLICATION_CREDENTIALS, or choose another " +
	"method there (Use Gemini API Key, with GEMINI_API_KEY set)"

// geminiNoVertexConfig is the hint of "Vertex AI" chosen without its
// variables.
const geminiNoVertexConfig = "Gemini CLI is set to use Vertex AI but its environment lacks GOOGLE_CLOUD_PROJECT and " +
	"GOOGLE_CLOUD_LOCATION (or GOOGLE_API_KEY): set them where you run dlgt, or run `gemini` once in a terminal and choose another method (Use Gemini API Key, with GEMINI_API_KEY set)"

// geminiAuthVars are the variables the check reads, from the client's
// environment or a .env file Gemini would load.
var geminiAuthVars = []string{
	"CLOUD_SHELL", "GEMINI_CLI_USE_COMPUTE_ADC", "GOOGLE_APPLICATION_CREDENTIALS",
	"GEMINI_FORCE_ENCRYPTED_FILE_STORAGE", "GOOGLE_GENAI_USE_GCA", "GOOGLE_CLOUD_ACCESS_TOKEN",
	"GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
}

// maxGeminiEnvFile bounds a .env file read.
const maxGeminiEnvFile = 1 << 20

// SignInChecker is implemented by a harness whose sign-in state can be
// read from its settings, credential files and environment before it is
// started: SignInProblem returns a fixed hint saying why it would stop at
// a sign-in screen (and what to do), or "" when it would not or that
// cannot be told. The daemon fails such a launch at once; doctor reports
// it.
type SignInChecker interface {
	SignInProblem(getenv func(string) string, cwd string) string
}

// SignInProblem is GeminiSignInProblem.
func (Gemini) SignInProblem(getenv func(string) string, cwd string) string {
	return GeminiSignInProblem(getenv, cwd)
}

// GeminiSignInProblem says why Gemini CLI 0.61.0 started with env in cwd
// would stop at a sign-in screen waiting for a person, as a fixed hint
// naming `gemini` and the variables it takes, or "" when a sign-in is
// configured or cannot be ruled out (a settings file that does not parse,
// an external or keychain sign-in, an API key Gemini may have stored: its
// own screen says so then).
func GeminiSignInProblem(getenv func(string) string, cwd string) string {
	userDir, err := geminiDescriptor().Config.Resolve(getenv)
	if err != nil {
		return ""
	}
	// The merged settings' auth: system defaults, user, workspace, system
	// (the later wins, as in Gemini).
	system := getenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
	if system == "" {
		system = "/etc/gemini-cli/settings.json"
	}
	defaults := getenv("GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
	if defaults == "" {
		defaults = filepath.Join(filepath.Dir(system), "system-defaults.json")
	}
	files := []string{defaults, filepath.Join(userDir, "settings.json")}
	if cwd != "" {
		if ws := filepath.Join(cwd, ".gemini", "settings.json"); filepath.Clean(ws) != filepath.Clean(files[1]) {
			files = append(files, ws)
		}
	}
	files = append(files, system)
	selected, external := "", false
	for _, f := range files {
		a, ok := readGeminiAuth(f)
		if !ok {
			return "" // cannot tell
		}
		if a.selected != "" {
			selected = a.selected
		}
		external = external || a.external
	}
	if external {
		return ""
	}
	set := geminiEnvNames(getenv, cwd, userDir)
	switch selected {
	case "":
		if set["CLOUD_SHELL"] || set["GEMINI_CLI_USE_COMPUTE_ADC"] {
			return ""
		}
		return geminiNotSignedIn
	case "oauth-personal":
		if set["GOOGLE_APPLICATION_CREDENTIALS"] || set["GEMINI_FORCE_ENCRYPTED_FILE_STORAGE"] ||
			(set["GOOGLE_GENAI_USE_GCA"] && set["GOOGLE_CLOUD_ACCESS_TOKEN"]) {
			return ""
		}
		if _, err := os.Stat(filepath.Join(userDir, "oauth_creds.json")); err == nil || !os.IsNotExist(err) {
			return ""
		}
		return geminiNoGoogleSignIn
	case "vertex-ai":
		if set["GOOGLE_API_KEY"] || (set["GOOGLE_CLOUD_PROJECT"] && set["GOOGLE_CLOUD_LOCATION"]) {
			return ""
		}
		return geminiNoVertexConfig
	}
	return ""
}

// geminiAuthSettings is the auth part of one settings file.
type geminiAuthSettings struct {
	selected string
	external bool
}

// readGeminiAuth reads path's chosen sign-in: ok false when the file
// exists but cannot be read or parsed (the caller then cannot tell); a
// missing file chooses nothing.
func readGeminiAuth(path string) (geminiAuthSettings, bool) {
	data, err := readBounded(path, maxGeminiSettings)
	if os.IsNotExist(err) {
		return geminiAuthSettings{}, true
	}
	if err != nil {
		return geminiAuthSettings{}, false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return geminiAuthSettings{}, true
	}
	var s struct {
		SelectedAuthType string `json:"selectedAuthType"` // the settings format before 0.3
		Security         struct {
			Auth struct {
				SelectedType string `json:"selectedType"`
				UseExternal  bool   `json:"useExternal"`
			} `json:"auth"`
		} `json:"security"`
	}
	if json.Unmarshal(stripJSONComments(data), &s) != nil {
		return geminiAuthSettings{}, false
	}
	a := geminiAuthSettings{selected: s.Security.Auth.SelectedType, external: s.Security.Auth.UseExternal}
	if a.selected == "" {
		a.selected = s.SelectedAuthType
	}
	return a, true
}

// geminiEnvNames are the geminiAuthVars set (non-empty) in env or named in
// any .env file Gemini could load from cwd, the user's home or Gemini
// directory.
func geminiEnvNames(getenv func(string) string, cwd, userDir string) map[string]bool {
	set := map[string]bool{}
	for _, k := range geminiAuthVars {
		if getenv(k) != "" {
			set[k] = true
		}
	}
	var files []string
	for dir := filepath.Clean(cwd); cwd != "" && filepath.IsAbs(dir); dir = filepath.Dir(dir) {
		files = append(files, filepath.Join(dir, ".gemini", ".env"), filepath.Join(dir, ".env"))
		if dir == filepath.Dir(dir) {
			break
		}
	}
	if home := getenv("HOME"); filepath.IsAbs(home) {
		files = append(files, filepath.Join(home, ".gemini", ".env"), filepath.Join(home, ".env"))
	}
	files = append(files, filepath.Join(userDir, ".env"), filepath.Join(filepath.Dir(userDir), ".env"))
	for _, f := range files {
		data, err := readBounded(f, maxGeminiEnvFile)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), maxGeminiEnvFile)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			line = strings.TrimSpace(strings.TrimPrefix(line, "export "))
			name, value, ok := strings.Cut(line, "=")
			if ok && strings.Trim(strings.TrimSpace(value), `"'`) != "" {
				set[strings.TrimSpace(name)] = true
			}
		}
	}
	return set
}
