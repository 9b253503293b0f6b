package hookhttp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/dlgt-dev/dlgt/hookfwd"
	"github.com/dlgt-dev/dlgt/rpc"
)

// A hook reaches deliver only with its launch's token, as a POST with a
// JSON body and no browser origin; everything else is refused with its
// status and delivers nothing.
func TestServerDeliversOnlyAuthorizedHooks(t *testing.T) {
	var mu sync.Mutex
	var got []rpc.HookParams
	s, err := Listen(slog.New(slog.NewTextHandler(io.Discard, nil)), func(_ context.Context, p rpc.HookParams) bool {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hook := s.ForLaunch("l-1")
	if !strings.HasPrefix(hook.URL, "http://127.0.0.1:") || hook.Token == "" || hook.Token == s.ForLaunch("l-2").Token {
		t.Fatalf("ForLaunch = %+v: want a loopback URL and a token per launch", hook)
	}
	post := func(method, url, token, origin, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, c := range []struct {
		what                       string
		method, url, token, origin string
		body                       string
		status                     int
	}{
		{"a GET", http.MethodGet, hook.URL + "/Stop", hook.Token, "", `{}`, http.StatusMethodNotAllowed},
		{"a browser", http.MethodPost, hook.URL + "/Stop", hook.Token, "http://example.test", `{}`, http.StatusForbidden},
		{"no token", http.MethodPost, hook.URL + "/Stop", "", "", `{}`, http.StatusUnauthorized},
		{"another launch's token", http.MethodPost, hook.URL + "/Stop", s.ForLaunch("l-2").Token, "", `{}`, http.StatusUnauthorized},
		{"not JSON", http.MethodPost, hook.URL + "/Stop", hook.Token, "", `{`, http.StatusBadRequest},
		{"too large", http.MethodPost, hook.URL + "/Stop", hook.Token, "", `"` + strings.Repeat("x", hookfwd.MaxPayload) + `"`, http.StatusRequestEntityTooLarge},
	} {
		if st := post(c.method, c.url, c.token, c.origin, c.body); st != c.status {
			t.Errorf("%s: status %d, want %d", c.what, st, c.status)
		}
	}
	mu.Lock()
	n := len(got)
	mu.Unlock()
	if n != 0 {
		t.Fatalf("refused requests delivered %d hooks", n)
	}
	if st := post(http.MethodPost, hook.URL+"/Stop", hook.Token, "", `{"a":1}`); st != http.StatusOK {
		t.Fatalf("an authorized hook: status %d", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].LaunchID != "l-1" || got[0].Event != "Stop" || string(got[0].Payload) != `{"a":1}` {
		t.Fatalf("delivered %+v", got)
	}
}
