// Package tagstest builds tag sets for tests: filler tags that bring a
// resource to (or past) a cloud's tag limit.
package tagstest

import "fmt"

// Numbered returns n tags named prefix00, prefix01, ... (two digits at
// least), each with the value "v".
func Numbered(prefix string, n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("%s%02d", prefix, i)] = "v"
	}
	return m
}
