package statedir

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

func TestResolvePaths(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		home string
		sock string
	}{
		{"DLGT_HOME", map[string]string{"DLGT_HOME": "/h", "XDG_STATE_HOME": "/x", "HOME": "/u"}, "/h", "/h/run/1.2.3/dlgt.sock"},
		{"XDG_STATE_HOME", map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/u"}, "/x/dlgt", "/x/dlgt/run/1.2.3/dlgt.sock"},
		{"HOME", map[string]string{"HOME": "/u"}, "/u/.local/state/dlgt", "/u/.local/state/dlgt/run/1.2.3/dlgt.sock"},
		{"DLGT_SOCKET", map[string]string{"DLGT_HOME": "/h", "DLGT_SOCKET": "/tmp/pinned.sock"}, "/h", "/tmp/pinned.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ResolvePaths(func(k string) string { return tt.env[k] }, "1.2.3")
			if err != nil {
				t.Fatal(err)
			}
			if p.Home != tt.home || p.Socket != tt.sock {
				t.Fatalf("home %s socket %s, want %s %s", p.Home, p.Socket, tt.home, tt.sock)
			}
			if p.RunDir != filepath.Join(tt.home, "run", "1.2.3") || p.DataDir != filepath.Join(tt.home, "data", "1.2.3") ||
				p.DB != filepath.Join(p.DataDir, "dlgt.db") || p.RawDir != filepath.Join(p.DataDir, "raw") || p.Log != filepath.Join(p.RunDir, "daemon.log") {
				t.Fatalf("paths %+v", p)
			}
		})
	}
	// A relative DLGT_HOME or DLGT_SOCKET would name another directory in
	// every working directory: refused, naming the variable.
	for _, env := range []map[string]string{
		{"DLGT_HOME": "rel"}, {"DLGT_HOME": "./rel"}, {"DLGT_HOME": "/h", "DLGT_SOCKET": "s.sock"},
	} {
		_, err := ResolvePaths(func(k string) string { return env[k] }, "v")
		var re *rpc.Error
		if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument || !strings.Contains(re.Message, "relative") {
			t.Errorf("%v: err %v, want INVALID_ARGUMENT", env, err)
		} else if _, bad := env[re.Field]; !bad || filepath.IsAbs(env[re.Field]) {
			t.Errorf("%v: field %q", env, re.Field)
		}
	}
	// A relative XDG_STATE_HOME is ignored (the XDG base directory spec).
	t.Run("relative XDG_STATE_HOME", func(t *testing.T) {
		p, err := ResolvePaths(func(k string) string { return map[string]string{"XDG_STATE_HOME": "x", "HOME": "/u"}[k] }, "v")
		if err != nil || p.Home != "/u/.local/state/dlgt" {
			t.Fatalf("home %q, err %v", p.Home, err)
		}
	})
	t.Run("no home at all", func(t *testing.T) {
		if _, err := ResolvePaths(func(string) string { return "" }, "v"); err == nil {
			t.Fatal("want an error without DLGT_HOME, XDG_STATE_HOME or HOME")
		}
	})
}
