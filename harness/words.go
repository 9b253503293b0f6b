package harness

import (
	"slices"
	"strings"
)

// DisplayNames lists the products' names of ds in order, for people:
// "Claude Code".
func DisplayNames(ds []Descriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.DisplayName
	}
	return out
}

// OrList joins words for a sentence: "a", "a or b", "a, b or c".
func OrList(words []string) string { return joinList(words, " or ") }

// AndList joins words for a sentence: "a", "a and b", "a, b and c".
func AndList(words []string) string { return joinList(words, " and ") }

func joinList(words []string, last string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + last + words[len(words)-1]
}

// Filter returns the descriptors of ds that keep accepts, in order.
func Filter(ds []Descriptor, keep func(Descriptor) bool) []Descriptor {
	var out []Descriptor
	for _, d := range ds {
		if keep(d) {
			out = append(out, d)
		}
	}
	return out
}

// Select returns the descriptors of ds that names name (blank names are
// skipped, repeats count once), in ds's order; a name ds lacks is an
// *UnknownError.
func Select(ds []Descriptor, names []string) ([]Descriptor, error) {
	var want []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			if _, err := Find(ds, n); err != nil {
				return nil, err
			}
			want = append(want, n)
		}
	}
	return Filter(ds, func(d Descriptor) bool { return slices.Contains(want, d.Name) }), nil
}
