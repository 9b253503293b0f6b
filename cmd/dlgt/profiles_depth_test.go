package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/dlgt-dev/dlgt/rpc"
)

func TestParseProfilesRejectsDeepNesting(t *testing.T) {
	deep := "[profiles.p]\nharness_options = " + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + "\n"
	if _, err := parseProfiles("p.toml", []byte(deep)); !errors.Is(err, rpc.ErrInvalidArgument) || !strings.Contains(err.Error(), "deep") {
		t.Fatalf("deep nesting: %v", err)
	}
	// Brackets inside strings and comments do not count.
	ok := "# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n[profiles.p]\nmodel = \"" + strings.Repeat("[{", 40) + "\"\n"
	if _, err := parseProfiles("p.toml", []byte(ok)); err != nil {
		t.Fatalf("quoted brackets: %v", err)
	}
}
