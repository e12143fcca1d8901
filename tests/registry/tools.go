//go:build tools

// Package tools records the command this module builds (the distribution registry, the test environment's OCI
// registry), so that `go mod tidy` keeps its dependencies in go.sum.
package tools

import (
	_ "github.com/distribution/distribution/v3/cmd/registry"
)
