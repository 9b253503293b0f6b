package daemon

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlgt-dev/dlgt/harness"
)

// Prompt delivery on evidence, with the real CLIs (and the fake): every
// typed prompt, a small one and a 100 KB multi-line one, waits for the
// TUI's bracketed paste mode before Ctrl-U and the paste, and for the
// paste shown at the cursor before Enter (daemon/deliver.go). Here each
// wait's fallback is 2 minutes instead of seconds, so a delivery that
// ended on its fallback is a TUI that never showed the evidence where
// dlgt looks for it, whatever the machine's load; the steps check that
// the model got each prompt once, byte-exact.
//
//	go test -race -count=1 -run 'TestE2EDeliveryEvidence' ./daemon/
func TestE2EDeliveryEvidence(t *testing.T) {
	for _, a := range e2eHarnesses {
		t.Run(a.name, func(t *testing.T) {
			rig := a.start(t)
			logs := &logBuffer{}
			rig.td = startPatientDaemon(t, rig.env, logs)
			s := &e2eScenario{e2eRig: rig, a: a, cwd: t.TempDir()}
			for _, st := range []struct {
				name string
				run  func(*testing.T, *e2eScenario)
			}{{"CreateFetch", stepCreateFetch}, {"FollowUp", stepFollowUp}, {"LargeMultiLinePrompt", stepLargePrompt}} {
				if !t.Run(st.name, func(t *testing.T) { st.run(t, s) }) {
					t.FailNow()
				}
			}
			log := logs.String()
			if strings.Contains(log, "prompt delivery fell back") {
				t.Fatalf("a delivery ended on its fallback:\n%s", grepLines(log, "prompt delivery"))
			}
			// Two waits per typed prompt; a new Session's first prompt
			// goes on the harness's command line (Codex's always, Claude
			// Code's and Gemini CLI's up to harness.MaxArgPrompt), unless
			// a warm spare's claim types it. A spare's own readiness
			// waits are not deliveries.
			typed := 3
			if !a.warm {
				typed = 2
			}
			if n := strings.Count(log, "prompt delivery: evidence seen"); n != 2*typed {
				t.Fatalf("%d deliveries on evidence, want %d:\n%s", n, 2*typed, grepLines(log, "prompt delivery"))
			}
			t.Logf("\n%s", grepLines(log, "prompt delivery"))
		})
	}
}

// patientClaude, patientCodex, patientGemini and patientCopilot are the
// adapters with their delivery fallbacks at 2 minutes. Each embeds its
// adapter's own type, not the Harness interface, so the optional
// interfaces the daemon asks for (harness.ReplyReader, LaunchPrompter,
// ...) stay as they are.
type (
	patientClaude  struct{ harness.Claude }
	patientCodex   struct{ harness.Codex }
	patientGemini  struct{ harness.Gemini }
	patientCopilot struct{ harness.Copilot }
)

func (h patientCopilot) Submit(prompt string) []harness.Keystroke {
	return patient(h.Copilot.Submit(prompt))
}

func (h patientGemini) Submit(prompt string) []harness.Keystroke {
	return patient(h.Gemini.Submit(prompt))
}

func (h patientClaude) Submit(prompt string) []harness.Keystroke {
	return patient(h.Claude.Submit(prompt))
}

func (h patientCodex) Submit(prompt string) []harness.Keystroke {
	return patient(h.Codex.Submit(prompt))
}

// patientOf is h's patient adapter; false: h's type has none (a harness
// registered after this switch was written: add its row).
func patientOf(h harness.Harness) (harness.Harness, bool) {
	switch h := h.(type) {
	case harness.Claude:
		return patientClaude{h}, true
	case harness.Codex:
		return patientCodex{h}, true
	case harness.Gemini:
		return patientGemini{h}, true
	case harness.Copilot:
		return patientCopilot{h}, true
	}
	return nil, false
}

// patientHarnesses is every registered harness (harness.All) under its
// patient adapter, keyed by name; it fails t for one without an adapter.
func patientHarnesses(t *testing.T) map[string]harness.Harness {
	t.Helper()
	out := map[string]harness.Harness{}
	for _, d := range harness.All() {
		p, ok := patientOf(d.Harness)
		if !ok {
			t.Fatalf("harness %q (%T) has no patient adapter: add its row to patientOf (e2e_deliver_test.go)", d.Name, d.Harness)
		}
		out[d.Name] = p
	}
	return out
}

// TestPatientAdaptersCoverRegistry runs without the CLIs: every
// registered harness has a patient adapter under its own name, with every
// method of the adapter it wraps (so the same optional interfaces), and
// only Submit's fallbacks changed.
func TestPatientAdaptersCoverRegistry(t *testing.T) {
	hs := patientHarnesses(t)
	if len(hs) != len(harness.All()) {
		t.Fatalf("%d patient adapters for %d registered harnesses", len(hs), len(harness.All()))
	}
	for _, d := range harness.All() {
		p := hs[d.Name]
		if p == nil || p.Name() != d.Name {
			t.Fatalf("patient adapter for %q is %v", d.Name, p)
		}
		orig, wrapped := reflect.TypeOf(d.Harness), reflect.TypeOf(p)
		for i := 0; i < orig.NumMethod(); i++ {
			if _, ok := wrapped.MethodByName(orig.Method(i).Name); !ok {
				t.Errorf("%s: patient adapter %v lacks %s", d.Name, wrapped, orig.Method(i).Name)
			}
		}
		keys := p.Submit("x")
		awaits := 0
		for _, k := range keys {
			if k.Await != nil {
				awaits++
				if k.Await.Timeout != 2*time.Minute {
					t.Errorf("%s: a Submit wait's fallback is %v, want 2m", d.Name, k.Await.Timeout)
				}
			}
		}
		if awaits == 0 {
			t.Errorf("%s: patient Submit has no waits: %+v", d.Name, keys)
		}
	}
}

func patient(keys []harness.Keystroke) []harness.Keystroke {
	for i := range keys {
		if keys[i].Await != nil {
			a := *keys[i].Await
			a.Timeout = 2 * time.Minute
			keys[i].Await = &a
		}
	}
	return keys
}

// startPatientDaemon is startTestDaemonWith with the patient adapters
// and a debug log collected in logs.
func startPatientDaemon(t *testing.T, env map[string]string, logs *logBuffer) *testDaemon {
	t.Helper()
	td := newTestDaemon(t, env)
	td.opts.Harnesses = patientHarnesses(t)
	td.logTo = logs
	td.start()
	t.Cleanup(td.stop)
	return td
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
