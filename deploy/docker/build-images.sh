#!/usr/bin/env bash
# Builds the service images without pulling anything: static binaries (CGO_ENABLED=0, -trimpath -s -w) on an
# empty base (FROM scratch) plus a small rootfs made here from the host: CA certificates, passwd/group with
# the non-root user 65532, /tmp (1777) and /data (owned by 65532).
#
#   deploy/docker/build-images.sh [analysis-svc] [case-svc]     (default: both)
#
# Env: ANALYSIS_IMAGE (openir/analysis-svc:dev), CASE_IMAGE (openir/case-svc:dev), GO (go), DOCKER (docker),
# GOARCH (host), CA_CERTS (/etc/ssl/certs/ca-certificates.crt), KEEP_CONTEXT=1 keeps the temp build context.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
GO=${GO:-go}
DOCKER=${DOCKER:-docker}
ANALYSIS_IMAGE=${ANALYSIS_IMAGE:-openir/analysis-svc:dev}
CASE_IMAGE=${CASE_IMAGE:-openir/case-svc:dev}
CA_CERTS=${CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}
services=("$@")
[ ${#services[@]} -gt 0 ] || services=(analysis-svc case-svc)

[ -r "$CA_CERTS" ] || { echo "CA certificate bundle $CA_CERTS not found (set CA_CERTS)" >&2; exit 1; }
tar --version 2>/dev/null | grep -q 'GNU tar' || { echo "GNU tar is needed to write the rootfs layer" >&2; exit 1; }

ctx=$(mktemp -d "${TMPDIR:-/tmp}/openir-images.XXXXXX")
if [ "${KEEP_CONTEXT:-}" = 1 ]; then echo "build context: $ctx"; else trap 'rm -rf "$ctx"' EXIT; fi

# rootfs.tar: etc and tmp owned by root, data and the user's home by 65532. Fixed mtimes and order make the
# layer identical from one build to the next, so Docker reuses it.
rfs=$ctx/rootfs
mkdir -p "$rfs/etc/ssl/certs" "$rfs/tmp" "$rfs/data" "$rfs/home/nonroot"
cp "$CA_CERTS" "$rfs/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rfs/etc/group"
printf 'hosts: files dns\n' >"$rfs/etc/nsswitch.conf"
chmod 0644 "$rfs/etc/passwd" "$rfs/etc/group" "$rfs/etc/nsswitch.conf" "$rfs/etc/ssl/certs/ca-certificates.crt"
chmod 0755 "$rfs/etc" "$rfs/etc/ssl" "$rfs/etc/ssl/certs" "$rfs/home"
chmod 1777 "$rfs/tmp"
chmod 0750 "$rfs/data" "$rfs/home/nonroot"
tarflags=(--sort=name --mtime=@0 --numeric-owner --format=gnu)
tar "${tarflags[@]}" --owner=0 --group=0 -C "$rfs" -cf "$ctx/rootfs.tar" etc --no-recursion home tmp
tar "${tarflags[@]}" --owner=65532 --group=65532 -C "$rfs" -rf "$ctx/rootfs.tar" data home/nonroot
rm -rf "$rfs"

rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
for svc in "${services[@]}"; do
	case $svc in
	analysis-svc) image=$ANALYSIS_IMAGE ;;
	case-svc) image=$CASE_IMAGE ;;
	*) echo "unknown service $svc (analysis-svc, case-svc)" >&2; exit 2 ;;
	esac
	echo "== $svc -> $image"
	(cd "$root" && CGO_ENABLED=0 GOOS=linux "$GO" build -trimpath -ldflags='-s -w' -o "$ctx/$svc" "./$svc/cmd/$svc")
	cp "$root/deploy/docker/Dockerfile.$svc" "$ctx/Dockerfile.$svc"
	"$DOCKER" build --quiet -f "$ctx/Dockerfile.$svc" -t "$image" \
		--label "org.opencontainers.image.title=$svc" \
		--label "org.opencontainers.image.revision=$rev" \
		"$ctx" >/dev/null
	rm -f "$ctx/$svc"
	size=$("$DOCKER" image inspect -f '{{.Size}}' "$image")
	printf '%s: %s MB\n' "$image" "$(awk -v s="$size" 'BEGIN{printf "%.1f", s/1000000}')"
done
