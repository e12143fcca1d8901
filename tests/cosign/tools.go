//go:build tools

// Package tools records the command this module builds (cosign, for the interoperability tests of plugin
// signatures), so that `go mod tidy` keeps its dependencies in go.sum.
package tools

import (
	_ "github.com/sigstore/cosign/v3/cmd/cosign"
)
