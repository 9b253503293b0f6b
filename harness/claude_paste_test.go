package harness

import "testing"

func TestUnwrapClaudePastes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain prompt", "plain prompt"},
		{"\n\n<pasted_content id=\"53a8\">\nline 1\nline 2\n</pasted_content id=\"53a8\">\n", "line 1\nline 2"},
		{"typed\n\n<pasted_content id=\"0f0f\">\nbody\n</pasted_content id=\"0f0f\">\n\nafter", "typedbodyafter"},
		{"<pasted_content id=\"zzzz\">\nnot ours\n</pasted_content id=\"zzzz\">\n", "<pasted_content id=\"zzzz\">\nnot ours\n</pasted_content id=\"zzzz\">\n"},
		{"\n\n<pasted_content id=\"53a8\">\nunclosed", "\n\n<pasted_content id=\"53a8\">\nunclosed"},
		{"<pasted_content id=\"53a8\">\n\n</pasted_content id=\"53a8\">\n", ""},
	} {
		if got := unwrapClaudePastes(c.in); got != c.want {
			t.Errorf("unwrapClaudePastes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	ev, err := Claude{}.ParseHook("UserPromptSubmit", []byte(`{"hook_event_name":"UserPromptSubmit","prompt":"\n\n<pasted_content id=\"53a8\">\na\nb\nc\n</pasted_content id=\"53a8\">\n"}`))
	if err != nil || ev.Prompt == nil || *ev.Prompt != "a\nb\nc" {
		t.Fatalf("ParseHook = %+v, %v", ev, err)
	}
}
