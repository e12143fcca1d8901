//go:build tools

// Package tools records KubeRay's operator command that this module builds, so that `go mod tidy` keeps its
// dependencies in go.sum.
package tools

import (
	_ "github.com/ray-project/kuberay/ray-operator"
)
