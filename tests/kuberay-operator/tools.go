//go:build tools

// Package tools records KubeRay's commands that this module builds (the operator and its light-weight RayJob
// submitter), so that `go mod tidy` keeps their dependencies in go.sum.
package tools

import (
	_ "github.com/ray-project/kuberay/ray-operator"
	_ "github.com/ray-project/kuberay/ray-operator/rayjob-submitter/cmd"
)
