package acp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dlgt-dev/dlgt/harness"
)

// promptText is the turn's prompt made of the editor's content blocks:
// text as it is; a resource link as its path (a file URI) or URI; an
// embedded resource as its path or URI and, for a text resource, its text
// in a fenced block. Images and audio are refused (the capabilities say
// so): no harness here takes them through a prompt.
func promptText(blocks []sdk.ContentBlock) (string, error) {
	var b strings.Builder
	// sep keeps a path apart from the text around it.
	sep := func() {
		if s := b.String(); s != "" && !strings.HasSuffix(s, " ") && !strings.HasSuffix(s, "\n") {
			b.WriteByte(' ')
		}
	}
	for i, blk := range blocks {
		switch {
		case blk.Text != nil:
			b.WriteString(blk.Text.Text)
		case blk.ResourceLink != nil:
			sep()
			b.WriteString(uriPath(blk.ResourceLink.Uri))
			b.WriteByte(' ')
		case blk.Resource != nil:
			switch r := blk.Resource.Resource; {
			case r.TextResourceContents != nil:
				if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
					b.WriteByte('\n')
				}
				fence := fenceFor(r.TextResourceContents.Text)
				fmt.Fprintf(&b, "%s:\n%s\n%s", uriPath(r.TextResourceContents.Uri), fence, r.TextResourceContents.Text)
				if !strings.HasSuffix(r.TextResourceContents.Text, "\n") {
					b.WriteByte('\n')
				}
				b.WriteString(fence + "\n")
			case r.BlobResourceContents != nil:
				sep()
				b.WriteString(uriPath(r.BlobResourceContents.Uri))
				b.WriteByte(' ')
			default:
				return "", invalidParams(fmt.Sprintf("prompt[%d]: a resource without contents", i))
			}
		case blk.Image != nil, blk.Audio != nil:
			return "", invalidParams(fmt.Sprintf("prompt[%d]: images and audio are not passed to the harness (promptCapabilities says so)", i))
		default:
			return "", invalidParams(fmt.Sprintf("prompt[%d]: unknown content block", i))
		}
	}
	text := strings.TrimRight(b.String(), " ")
	if strings.TrimSpace(text) == "" {
		return "", invalidParams("prompt: the prompt is empty")
	}
	return text, nil
}

// uriPath is a file URI's path, other URIs as they are.
func uriPath(u string) string {
	if p, err := url.Parse(u); err == nil && p.Scheme == "file" && p.Path != "" {
		return p.Path
	}
	return u
}

// The package's patterns compile on first use: every dlgt command links
// this package, and most never render ACP content (docs/design.md).
var backticks = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`{3,}") })

// fenceFor is a Markdown fence longer than any run of backticks in text.
func fenceFor(text string) string {
	n := 3
	for _, m := range backticks().FindAllString(text, -1) {
		if len(m) >= n {
			n = len(m) + 1
		}
	}
	return strings.Repeat("`", n)
}

// titleOf is a Session title from the prompt's first non-empty line:
// controls dropped, at most 60 runes.
func titleOf(prompt string) string {
	for _, line := range strings.Split(prompt, "\n") {
		rs := []rune(strings.TrimSpace(strings.Map(func(r rune) rune {
			if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
				return ' '
			}
			return r
		}, line)))
		if len(rs) > 60 {
			rs = append(rs[:60], '…')
		}
		if len(rs) > 0 {
			return string(rs)
		}
	}
	return "editor thread"
}

// randHex is n random bytes in hex.
func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

var nonKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9_-]+`) })

// mcpOptions are the harness options that give the editor's MCP servers
// to one launch of a harness that takes servers per launch (Claude Code:
// --mcp-config; Codex: -c mcp_servers.NAME; Copilot CLI:
// --additional-mcp-config). skipped names the servers
// the harness cannot take (every one for a harness without a per-launch
// form, SSE servers for Codex).
func mcpOptions(format harness.MCPFormat, servers []sdk.McpServer) (opts, skipped []string) {
	if len(servers) == 0 {
		return nil, nil
	}
	switch format {
	case harness.MCPClaudeJSON:
		return jsonMCPOption("mcp-config=", "stdio", nil, servers)
	case harness.MCPCopilotJSON:
		// The shape `copilot mcp add --json` prints (1.0.102): a
		// command's type is "local", and tools lists the enabled ones.
		return jsonMCPOption("additional-mcp-config=", "local", []string{"*"}, servers)
	case harness.MCPCodexTOML:
		for _, s := range servers {
			switch {
			case s.Stdio != nil:
				fields := []string{"command=" + tomlString(s.Stdio.Command), "args=" + tomlArray(s.Stdio.Args)}
				if len(s.Stdio.Env) > 0 {
					fields = append(fields, "env="+tomlTable(envMap(s.Stdio.Env)))
				}
				opts = append(opts, "mcp_servers."+codexName(s.Stdio.Name)+"={"+strings.Join(fields, ", ")+"}")
			case s.Http != nil:
				fields := []string{"url=" + tomlString(s.Http.Url)}
				if len(s.Http.Headers) > 0 {
					fields = append(fields, "http_headers="+tomlTable(headerMap(s.Http.Headers)))
				}
				opts = append(opts, "mcp_servers."+codexName(s.Http.Name)+"={"+strings.Join(fields, ", ")+"}")
			case s.Sse != nil:
				skipped = append(skipped, s.Sse.Name)
			default:
				skipped = append(skipped, "(an ACP-transport server)")
			}
		}
		return opts, skipped
	}
	for _, s := range servers {
		switch {
		case s.Stdio != nil:
			skipped = append(skipped, s.Stdio.Name)
		case s.Http != nil:
			skipped = append(skipped, s.Http.Name)
		case s.Sse != nil:
			skipped = append(skipped, s.Sse.Name)
		}
	}
	return nil, skipped
}

// jsonMCPOption is the one harness option (prefix and a JSON
// {"mcpServers": {...}}) that gives servers to Claude Code or Copilot
// CLI: a command with type stdioType, a URL with type http or sse, each
// with tools when it is not nil.
func jsonMCPOption(prefix, stdioType string, tools []string, servers []sdk.McpServer) (opts, skipped []string) {
	cfg := map[string]any{}
	for _, s := range servers {
		var name string
		var entry map[string]any
		switch {
		case s.Stdio != nil:
			name, entry = s.Stdio.Name, map[string]any{"type": stdioType, "command": s.Stdio.Command, "args": nonNil(s.Stdio.Args), "env": envMap(s.Stdio.Env)}
		case s.Http != nil:
			name, entry = s.Http.Name, map[string]any{"type": "http", "url": s.Http.Url, "headers": headerMap(s.Http.Headers)}
		case s.Sse != nil:
			name, entry = s.Sse.Name, map[string]any{"type": "sse", "url": s.Sse.Url, "headers": headerMap(s.Sse.Headers)}
		default:
			skipped = append(skipped, "(an ACP-transport server)")
			continue
		}
		if tools != nil {
			entry["tools"] = tools
		}
		cfg[name] = entry
	}
	if len(cfg) == 0 {
		return nil, skipped
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": cfg})
	return []string{prefix + string(b)}, skipped
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func envMap(vs []sdk.EnvVariable) map[string]string {
	m := map[string]string{}
	for _, v := range vs {
		m[v.Name] = v.Value
	}
	return m
}

func headerMap(hs []sdk.HttpHeader) map[string]string {
	m := map[string]string{}
	for _, h := range hs {
		m[h.Name] = h.Value
	}
	return m
}

// codexName is a server name as a Codex config key segment.
func codexName(name string) string {
	n := strings.Trim(nonKey().ReplaceAllString(strings.ToLower(name), "_"), "_")
	if n == "" {
		n = "server"
	}
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func tomlArray(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func tomlTable(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = tomlString(k) + "=" + tomlString(m[k])
	}
	return "{" + strings.Join(q, ", ") + "}"
}

// toolKind is the ACP kind of a harness tool, by its name.
func toolKind(tool string) sdk.ToolKind {
	switch strings.ToLower(tool) {
	case "bash", "shell", "exec_command", "run_shell_command", "local_shell":
		return sdk.ToolKindExecute
	case "edit", "multiedit", "write", "notebookedit", "apply_patch", "write_file", "replace":
		return sdk.ToolKindEdit
	case "read", "read_file", "read_many_files", "view_image":
		return sdk.ToolKindRead
	case "grep", "glob", "search_file_content", "list_directory", "ls":
		return sdk.ToolKindSearch
	case "webfetch", "websearch", "web_fetch", "google_web_search", "web_search":
		return sdk.ToolKindFetch
	}
	return sdk.ToolKindOther
}

// toolTitle is what the editor shows for a tool call: a shell command as
// it is, other tools by name and input, at most 200 runes.
func toolTitle(tool, input string) string {
	t := input
	if toolKind(tool) != sdk.ToolKindExecute || t == "" {
		t = strings.TrimSpace(tool + " " + input)
	}
	if rs := []rune(t); len(rs) > 200 {
		t = string(rs[:200]) + "…"
	}
	return t
}

func invalidParams(why string) *sdk.RequestError {
	return &sdk.RequestError{Code: -32602, Message: "Invalid params: " + why}
}
