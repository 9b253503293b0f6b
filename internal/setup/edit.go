package setup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/dlgt-dev/dlgt/harness"
)

// codexMCPTable is the server's table in config.toml: the keys mcp config
// passes with -c.
func codexMCPTable(s ServerSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[mcp_servers.%s]\n", harness.MCPServerName)
	for _, kv := range codexMCPFields(s) {
		fmt.Fprintf(&b, "%s = %s\n", kv[0], kv[1])
	}
	return b.String()
}

// codexConfigWithServer returns the config with table (one
// [mcp_servers.dlgt] table) in place of the file's dlgt entry, or added at
// the end. The entry must be written as [mcp_servers.dlgt] tables (as
// `codex mcp add` and this command write it); any other form is refused.
func codexConfigWithServer(old []byte, table string) ([]byte, error) {
	var before map[string]any
	if _, err := toml.Decode(string(old), &before); err != nil {
		return nil, fmt.Errorf("cannot parse it as TOML (%v); fix it or move it away, then run install again", err)
	}
	var want map[string]any
	if _, err := toml.Decode(table, &want); err != nil {
		return nil, fmt.Errorf("internal error: the entry does not parse: %v", err)
	}
	entry := want["mcp_servers"].(map[string]any)[harness.MCPServerName]
	servers, _ := before["mcp_servers"].(map[string]any)
	if cur, ok := servers[harness.MCPServerName]; ok && reflect.DeepEqual(cur, entry) {
		return old, nil
	}
	sections, err := tomlSections(old)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	pos, placed := 0, false
	for _, sec := range sections {
		if len(sec.key) < 2 || sec.key[0] != "mcp_servers" || sec.key[1] != harness.MCPServerName {
			continue
		}
		if sec.array {
			return nil, fmt.Errorf("mcp_servers.%s is an array of tables ([[...]]); remove it, then run install again", harness.MCPServerName)
		}
		if gap := old[pos:sec.start]; !placed || len(bytes.TrimSpace(gap)) > 0 {
			out.Write(gap) // blank lines between two of its tables go with them
		}
		if !placed {
			out.WriteString(table)
			placed = true
		}
		pos = sec.end
	}
	// An inline mcp_servers table cannot take another [table] (TOML 1.0;
	// Codex's parser holds to it, this one does not).
	if _, ok := before["mcp_servers"]; ok && !slices.ContainsFunc(sections, func(s tomlSection) bool { return s.key[0] == "mcp_servers" }) {
		return nil, fmt.Errorf("mcp_servers is not written as [mcp_servers...] tables (an inline table or dotted keys); add the entry by hand, or rewrite it as tables and run install again")
	}
	if _, ok := servers[harness.MCPServerName]; ok && !placed {
		return nil, fmt.Errorf("mcp_servers.%s is not written as a [mcp_servers.%s] table (an inline table or dotted keys); remove it, then run install again", harness.MCPServerName, harness.MCPServerName)
	}
	out.Write(old[pos:])
	if !placed {
		if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
			out.WriteByte('\n')
		}
		if out.Len() > 0 {
			out.WriteByte('\n')
		}
		out.WriteString(table)
	}
	// The result must be the old settings plus this entry, nothing else.
	var after map[string]any
	if _, err := toml.Decode(out.String(), &after); err != nil {
		return nil, fmt.Errorf("the edited file would not parse (%v): is mcp_servers an inline table? add the entry by hand", err)
	}
	if before == nil {
		before = map[string]any{}
	}
	if servers == nil {
		servers = map[string]any{}
		before["mcp_servers"] = servers
	}
	servers[harness.MCPServerName] = entry
	if !reflect.DeepEqual(after, before) {
		return nil, fmt.Errorf("internal error: the edit would change more than mcp_servers.%s", harness.MCPServerName)
	}
	return out.Bytes(), nil
}

// tomlSection is one table of a TOML file: from its header line to the
// next header, less the blank and comment lines just before that header
// (they usually belong to it).
type tomlSection struct {
	key        []string
	array      bool
	start, end int
}

// tomlSections finds the table headers of a TOML document (already known
// to parse), skipping multi-line strings.
func tomlSections(src []byte) ([]tomlSection, error) {
	var secs []tomlSection
	ml := ""          // the delimiter of the multi-line string we are in
	lastContent := -1 // end of the last line with content, in the current section
	for off := 0; off < len(src); {
		end := bytes.IndexByte(src[off:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += off + 1
		}
		line := string(src[off:end])
		trimmed := strings.TrimSpace(line)
		switch {
		case ml != "":
			lastContent = end
			ml = tomlLineState(line, ml)
		case strings.HasPrefix(trimmed, "["):
			if n := len(secs); n > 0 {
				secs[n-1].end = max(lastContent, secs[n-1].start)
			}
			key, array, err := tomlHeaderKey(trimmed)
			if err != nil {
				return nil, err
			}
			secs = append(secs, tomlSection{key: key, array: array, start: off, end: len(src)})
			lastContent = end
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		default:
			lastContent = end
			ml = tomlLineState(line, "")
		}
		off = end
	}
	if n := len(secs); n > 0 {
		// The last section runs to the end of the file.
		secs[n-1].end = len(src)
	}
	return secs, nil
}

// tomlLineState scans one line that starts inside the multi-line string
// delimited by ml ("" when outside) and returns the state at its end.
func tomlLineState(line, ml string) string {
	for i := 0; i < len(line); {
		if ml != "" {
			j := strings.Index(line[i:], ml)
			if j < 0 {
				return ml
			}
			if ml == `"""` {
				// An escaped quote does not close it.
				k := i + j
				bs := 0
				for k-1-bs >= 0 && line[k-1-bs] == '\\' {
					bs++
				}
				if bs%2 == 1 {
					i = k + 1
					continue
				}
			}
			i += j + 3
			for i < len(line) && line[i] == ml[0] { // up to two quotes may close it with the delimiter
				i++
			}
			ml = ""
			continue
		}
		switch c := line[i]; c {
		case '#':
			return ""
		case '"', '\'':
			delim := string([]byte{c, c, c})
			if strings.HasPrefix(line[i:], delim) {
				ml = delim
				i += 3
				continue
			}
			// A one-line string.
			i++
			for i < len(line) && line[i] != c {
				if c == '"' && line[i] == '\\' {
					i++
				}
				i++
			}
			i++
		default:
			i++
		}
	}
	return ml
}

// tomlHeaderKey parses "[a.b."c"]" or "[[a.b]]" (with a trailing comment).
func tomlHeaderKey(h string) ([]string, bool, error) {
	array := strings.HasPrefix(h, "[[")
	s := strings.TrimPrefix(h, "[")
	if array {
		s = s[1:]
	}
	var key []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, false, fmt.Errorf("cannot read the table header %q", h)
		}
		switch s[0] {
		case '"':
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, false, fmt.Errorf("cannot read the table header %q", h)
			}
			var k string
			if err := json.Unmarshal([]byte(s[:end+1]), &k); err != nil {
				k = s[1:end] // a TOML-only escape: compared as written
			}
			key = append(key, k)
			s = s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, false, fmt.Errorf("cannot read the table header %q", h)
			}
			key = append(key, s[1:end+1])
			s = s[end+2:]
		default:
			end := strings.IndexFunc(s, func(r rune) bool {
				return !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
			})
			if end <= 0 {
				return nil, false, fmt.Errorf("cannot read the table header %q", h)
			}
			key = append(key, s[:end])
			s = s[end:]
		}
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, ".") {
			s = s[1:]
			continue
		}
		if strings.HasPrefix(s, "]") {
			return key, array, nil
		}
		return nil, false, fmt.Errorf("cannot read the table header %q", h)
	}
}

// ---- Claude Code: JSON -------------------------------------------------------

// jsonWithMember returns the JSON document old with the member at path
// set to value, every other byte as it was. Objects missing on the way are
// created; an empty file reads as {}.
func jsonWithMember(old []byte, path []string, value any) ([]byte, error) {
	var before any
	if len(bytes.TrimSpace(old)) == 0 {
		old = []byte("{}\n")
		before = map[string]any{}
	} else if err := json.Unmarshal(old, &before); err != nil {
		return nil, fmt.Errorf("cannot parse it as JSON (%v); fix it or move it away, then run install again", err)
	}
	top, ok := before.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("it is not a JSON object")
	}
	// The wanted document, and whether it is there already.
	raw, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	var v any
	json.Unmarshal(raw, &v)
	m := top
	for i, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			if _, exists := m[k]; exists {
				return nil, fmt.Errorf("%q is not a JSON object", strings.Join(path[:i+1], "."))
			}
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	last := path[len(path)-1]
	if cur, ok := m[last]; ok && reflect.DeepEqual(cur, v) {
		return old, nil
	}
	m[last] = v
	start := bytes.IndexByte(old, '{')
	end := bytes.LastIndexByte(old, '}') + 1
	out, err := jsonSpliceMember(old, start, end, path, value, 0, jsonIndentUnit(old))
	if err != nil {
		return nil, err
	}
	var after any
	if err := json.Unmarshal(out, &after); err != nil || !reflect.DeepEqual(after, before) {
		return nil, fmt.Errorf("internal error: the edit would change more than %s (%v)", strings.Join(path, "."), err)
	}
	return out, nil
}

// jsonWithAllowRule adds rule to permissions.allow of a Claude Code
// settings file, unless it is there.
func jsonWithAllowRule(old []byte, rule string) ([]byte, error) {
	var doc struct {
		Permissions struct {
			Allow []any `json:"allow"`
		} `json:"permissions"`
	}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &doc); err != nil {
			return nil, fmt.Errorf("cannot parse it as a settings file (%v); fix it or move it away, then run install again", err)
		}
	}
	if slices.Contains(doc.Permissions.Allow, any(rule)) {
		return old, nil
	}
	return jsonWithMember(old, []string{"permissions", "allow"}, append(doc.Permissions.Allow, rule))
}

// jsonIndentUnit guesses the file's indentation (two spaces when flat).
func jsonIndentUnit(src []byte) string {
	if i := bytes.IndexByte(src, '\n'); i >= 0 {
		rest := src[i+1:]
		n := 0
		for n < len(rest) && (rest[n] == ' ' || rest[n] == '\t') {
			n++
		}
		if n > 0 {
			return string(rest[:n])
		}
	}
	return "  "
}

// jsonSpliceMember sets path in the object src[start:end] (at nesting
// depth), rendering new values with the file's indentation.
func jsonSpliceMember(src []byte, start, end int, path []string, value any, depth int, unit string) ([]byte, error) {
	type member struct {
		key        string
		start, end int
	}
	dec := json.NewDecoder(bytes.NewReader(src[start:end]))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var members []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		e := start + int(dec.InputOffset())
		members = append(members, member{key: t.(string), start: e - len(raw), end: e})
	}
	var found *member
	for i := range members {
		if members[i].key == path[0] {
			found = &members[i] // the last one wins, as in every parser
		}
	}
	splice := func(from, to int, s string) []byte {
		out := make([]byte, 0, len(src)+len(s))
		out = append(out, src[:from]...)
		out = append(out, s...)
		return append(out, src[to:]...)
	}
	if found != nil {
		if len(path) == 1 {
			return splice(found.start, found.end, jsonRender(value, depth+1, unit)), nil
		}
		return jsonSpliceMember(src, found.start, found.end, path[1:], value, depth+1, unit)
	}
	// Missing: wrap the value in the objects the rest of the path names.
	for i := len(path) - 1; i > 0; i-- {
		value = map[string]any{path[i]: value}
	}
	key, _ := json.Marshal(path[0])
	inner := strings.Repeat(unit, depth+1)
	m := string(key) + ": " + jsonRender(value, depth+1, unit)
	if len(members) == 0 {
		return splice(start, end, "{\n"+inner+m+"\n"+strings.Repeat(unit, depth)+"}"), nil
	}
	lastEnd := members[len(members)-1].end
	return splice(lastEnd, lastEnd, ",\n"+inner+m), nil
}

// jsonRender marshals v indented for nesting depth, without escaping HTML
// characters (the harness does not).
func jsonRender(v any, depth int, unit string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(strings.Repeat(unit, depth), unit)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}
