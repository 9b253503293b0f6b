package mockapi

import "fmt"

// CodexConfig is a Codex config.toml that runs Codex offline against the
// mock Responses API at url (a Server's URL), its key read from
// MOCK_API_KEY, with retries off so a failing mock fails the turn at once,
// and plugins off: with them on, Codex 0.171.0 syncs its curated plugins at
// every start (git ls-remote https://github.com/openai/plugins.git, then
// api.github.com and chatgpt.com). Codex still fetches an announcement tip
// from raw.githubusercontent.com at every TUI start; no setting of 0.171.0
// turns that off (its client ignores proxies). Callers append what they
// need more, as tables (a trusted project, for example).
func CodexConfig(url string) string {
	return fmt.Sprintf(`model = "mock-model"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = %q
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false
`, url+"/v1")
}

// CodexTrust is the config.toml table that marks dir a trusted project,
// so Codex starts there without asking.
func CodexTrust(dir string) string {
	return fmt.Sprintf("\n[projects.%q]\ntrust_level = \"trusted\"\n", dir)
}
