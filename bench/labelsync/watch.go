package main

import "strings"

// inScope reports whether a label is under the benchmark's prefixes.
func inScope(label string) bool {
	p, _, ok := strings.Cut(label, "/")
	return ok && (p == rackPrefix || p == securityPrefix)
}

// total sums writes by operation.
func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
