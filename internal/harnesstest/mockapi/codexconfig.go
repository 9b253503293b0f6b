package mockapi

import "fmt"

// CodexConfig is a Codex config.toml that runs Codex offline against the
// mock Responses API at url (a Server's URL), its key read from
// MOCK_API_KEY, with retries off so a failing mock fails the turn at once.
// Callers append what they need more (a trusted project, for example).
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
`, url+"/v1")
}

// CodexTrust is the config.toml table that marks dir a trusted project,
// so Codex starts there without asking.
func CodexTrust(dir string) string {
	return fmt.Sprintf("\n[projects.%q]\ntrust_level = \"trusted\"\n", dir)
}
