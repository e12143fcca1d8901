//go:build tools

// Package tools records the commands this module builds (helm and kustomize, for the tests of the Helm chart and
// the kustomize manifests in deploy/), so that `go mod tidy` keeps their dependencies in go.sum.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
	_ "sigs.k8s.io/kustomize/kustomize/v5"
)
