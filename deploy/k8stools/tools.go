//go:build tools

// Package k8stools pins the control-plane binaries the Kubernetes runner's tests start: kube-apiserver and
// kube-controller-manager of the release whose API types the runner speaks. build.sh builds them into a cache
// folder outside git. The tools build tag keeps this file out of every build; go mod tidy still sees the imports.
package k8stools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
