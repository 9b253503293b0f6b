package harness

import "strings"

// LaunchDiagnoser is implemented by harnesses that can tell, from the
// screen a failed launch ended with, that a screen of their own needing a
// person held it: a sign-in, a first-run setup. LaunchHint returns a fixed
// sentence saying so and what to do, or "" when nothing is recognised. The
// hint is the harness's own wording, never text taken from the screen.
type LaunchDiagnoser interface {
	LaunchHint(rows []string) string
}

// LaunchBlocker is a LaunchDiagnoser whose harness draws some screens
// only when it cannot go on without a person (Gemini CLI's sign-in, shown
// before its ready hook): BlockingLaunchHint returns the hint of such a
// screen, or "". The daemon fails a launch whose screen shows one as soon
// as it does, rather than at the startup timeout.
type LaunchBlocker interface {
	BlockingLaunchHint(rows []string) string
}

// screenHint is one recognisable screen: any of its phrases, found on the
// screen, gives its hint.
type screenHint struct {
	phrases []string
	hint    string
}

// matchScreen returns the hint of the first entry any of whose phrases
// rows contain. The rows are joined with single spaces and runs of blanks
// collapsed, so a phrase wrapped onto the next row still matches.
func matchScreen(rows []string, hints []screenHint) string {
	text := strings.Join(strings.Fields(strings.Join(rows, " ")), " ")
	for _, h := range hints {
		for _, p := range h.phrases {
			if strings.Contains(text, p) {
				return h.hint
			}
		}
	}
	return ""
}

// claudeLaunchHints are Claude Code 2.1.332's screens that hold a launch,
// by phrases of its own, most specific first. Seen with an empty HOME:
// its first run checks that it can reach Anthropic (offline it prints
// "Unable to connect to Anthropic services" and exits 1), then asks for a
// text style ("Let's get started." / "Choose the text style that looks
// best with your terminal"), then a login method ("Select login method:",
// then "Browser didn't open? Use the URL below to sign in" and "Paste code
// here if prompted"). A first run completed without a login reaches the
// prompt with "Not logged in · run /login" in its footer.
var claudeLaunchHints = []screenHint{
	{[]string{"Unable to connect to Anthropic services"},
		"Claude Code's first-run setup could not reach Anthropic: run `claude` once in a terminal with network access, finish its setup and sign in"},
	{[]string{"Select login method", "Browser didn't open? Use the URL below to sign in", "Paste code here if prompted", "Not logged in · run /login"},
		"Claude Code is not logged in: run `claude` once in a terminal and sign in"},
	{[]string{"Choose the text style that looks best with your terminal", "Let's get started."},
		"Claude Code has not finished its first-run setup: run `claude` once in a terminal, finish its setup and sign in"},
}

// LaunchHint recognises Claude Code's first-run and sign-in screens.
func (Claude) LaunchHint(rows []string) string { return matchScreen(rows, claudeLaunchHints) }

// codexLaunchHints are Codex 0.171.0's screens that hold a launch. Seen
// with an empty HOME: "Welcome to Codex, OpenAI's command-line coding
// agent" over "Sign in with ChatGPT", "Sign in with Device Code" and "Sign
// in another way" (then "Use your own OpenAI API key" / "Paste or type
// your API key", or "Finish signing in via your browser"). It stays there
// until the launch times out.
var codexLaunchHints = []screenHint{
	{[]string{"Sign in with ChatGPT", "Sign in with Device Code", "Sign in another way", "Paste or type your API key", "Finish signing in via your browser"},
		"Codex is not logged in: run `codex login` (or `codex` once) in a terminal"},
}

// LaunchHint recognises Codex's sign-in screens.
func (Codex) LaunchHint(rows []string) string { return matchScreen(rows, codexLaunchHints) }
