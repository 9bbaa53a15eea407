#!/usr/bin/env bash
# Builds the Kubernetes runner's test control plane into a cache folder outside git, skipping what is there:
# kube-apiserver and kube-controller-manager (k8s.io/kubernetes of the release in go.mod; about 12 min of CPU
# on 2 cores the first time, then seconds through GOCACHE) and the test-only kubelet stand-in (./fakelet).
# Prints the folder. OPENIR_K8S_BIN overrides it.
set -euo pipefail
cd "$(dirname "$0")"
GO=${GO:-go}
release=v1.37.2
out=${OPENIR_K8S_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/openir-k8stest/$release}
mkdir -p "$out"
# One build at a time: a second caller (another test package, another checkout) waits for the first.
exec 9>"$out/.build.lock"
flock 9
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$release"
for bin in kube-apiserver kube-controller-manager; do
  if [ ! -x "$out/$bin" ]; then
    echo "building $bin $release into $out (first time: several minutes)" >&2
    nice -n 19 "$GO" build -trimpath -ldflags="$ldflags" -o "$out/$bin.tmp" "k8s.io/kubernetes/cmd/$bin"
    mv "$out/$bin.tmp" "$out/$bin"
  fi
done
# The fakelet is small and changes with the repository: rebuilt every time (seconds when cached).
nice -n 19 "$GO" build -trimpath -o "$out/fakelet" ./fakelet
echo "$out"
