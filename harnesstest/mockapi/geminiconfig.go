package mockapi

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// GeminiModel is the concrete model the Gemini settings below select:
// with the default "auto", Gemini CLI first makes a routing classifier
// call for every prompt.
const GeminiModel = "gemini-2.5-flash"

// GeminiSettings is a Gemini CLI 0.61.0 settings.json that runs it offline
// against this mock with no first-run dialog: API-key auth (the key from
// GEMINI_API_KEY, the endpoint from GOOGLE_GEMINI_BASE_URL, see
// GeminiEnv), a concrete model, no usage statistics, update check or
// update notification (with these, only the mock is ever contacted), no
// IDE nudge, tips or compatibility warning, and session retention off
// (it deletes other sessions' files when any gemini starts).
func GeminiSettings() map[string]any {
	return map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"model":    map[string]any{"name": GeminiModel},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
		"general": map[string]any{
			"enableAutoUpdate": false, "enableAutoUpdateNotification": false,
			"sessionRetention": map[string]any{"enabled": false},
		},
		"ide": map[string]any{"enabled": false, "hasSeenNudge": true},
		"ui":  map[string]any{"hideTips": true, "showCompatibilityWarnings": false},
	}
}

// GeminiEnv is the environment that points Gemini CLI at the mock at url.
func GeminiEnv(url string) []string {
	return []string{"GEMINI_API_KEY=mock-gemini-key", "GOOGLE_GEMINI_BASE_URL=" + url}
}

// WriteGeminiHome writes home/.gemini/settings.json (GeminiSettings) and
// trustedFolders.json trusting each of trusted, so that Gemini CLI run
// with GEMINI_CLI_HOME=home starts at its input box there.
func WriteGeminiHome(home string, trusted ...string) error {
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(GeminiSettings(), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o600); err != nil {
		return err
	}
	folders := map[string]string{}
	for _, d := range trusted {
		folders[d] = "TRUST_FOLDER"
	}
	b, err = json.MarshalIndent(folders, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "trustedFolders.json"), b, 0o600)
}
