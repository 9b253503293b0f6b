package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

// The daemon serves exactly the descriptors: every public method
// (rpc.Public, the list the stdio proxy allows) and every internal one
// (rpc.Internal) has a handler, and no handler lacks a descriptor.
func TestServesExactlyTheDescriptors(t *testing.T) {
	served := (&runtime{}).methods()
	want := map[string]bool{}
	for _, d := range rpc.Public {
		want[d.MethodName()] = true
	}
	for _, d := range rpc.Internal {
		name := d.MethodName()
		if rpc.IsPublic(name) || !strings.HasPrefix(name, "internal.") {
			t.Errorf("internal descriptor %s is public or not named internal.*", name)
		}
		if want[name] {
			t.Errorf("%s has two descriptors", name)
		}
		want[name] = true
	}
	for name := range want {
		if served[name] == nil {
			t.Errorf("%s has a descriptor and no handler", name)
		}
	}
	for name := range served {
		if !want[name] {
			t.Errorf("%s is served without a descriptor", name)
		}
	}
	if len(served) != len(rpc.Public)+len(rpc.Internal) {
		t.Errorf("%d handlers for %d public and %d internal descriptors", len(served), len(rpc.Public), len(rpc.Internal))
	}
}

// Every handler decodes its params through its descriptor before any
// domain code runs: an unknown member or a non-object is refused with the
// same INVALID_ARGUMENT shape on every method (the runtime here holds
// nothing: reaching it would panic).
func TestEveryMethodDecodesFirst(t *testing.T) {
	rt := &runtime{}
	for name, m := range rt.methods() {
		for _, params := range []string{`{"no_such_field":1}`, `[1]`, `{"a":1} x`} {
			res, err := m(context.Background(), rpc.Peer{}, json.RawMessage(params))
			var re *rpc.Error
			if !errors.As(err, &re) || re.Code != rpc.CodeInvalidArgument || res != nil {
				t.Errorf("%s %s: %v, %v", name, params, res, err)
				continue
			}
			if params == `{"no_such_field":1}` && (re.Field != "no_such_field" || re.Message != "no_such_field: unknown field") {
				t.Errorf("%s: %+v", name, re)
			}
		}
	}
}
