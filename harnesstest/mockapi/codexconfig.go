package mockapi

import "fmt"

// CodexConfig is a Codex config.toml that runs Codex offline against the
// mock Responses API at url (a Server's URL), its key read from
// MOCK_API_KEY, with retries off so a failing mock fails the turn at once.
// What else Codex 0.171.0 contacts is off: analytics (codex exec looks up
// ab.chatgpt.com without it), plugins (with them on, every start syncs
// the curated plugins: git ls-remote https://github.com/openai/plugins.git,
// then api.github.com and chatgpt.com) and, though no attempt was seen
// here, the update check. Codex's TUI still fetches an announcement tip from
// raw.githubusercontent.com at every start; no setting of 0.171.0 turns
// that off. Callers append what they need more, as tables (a trusted
// project, for example).
func CodexConfig(url string) string {
	return fmt.Sprintf(`model = "mock-model"
model_provider = "mock"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
base_url = %q
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false

[analytics]
enabled = false
`, url+"/v1")
}

// CodexTrust is the config.toml table that marks dir a trusted project,
// so Codex starts there without asking.
func CodexTrust(dir string) string {
	return fmt.Sprintf("\n[projects.%q]\ntrust_level = \"trusted\"\n", dir)
}
