// Package azure is tagsync's Azure Resource Manager provider: it resolves
// nodes to the VM or scale set that carries their tags, reads tags in bulk per
// resource group, and patches tags key by key through the ARM Tags API, on the
// Azure SDK for Go.
package azure
