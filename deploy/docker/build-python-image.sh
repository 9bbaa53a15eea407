#!/usr/bin/env bash
# analysis-svc with Python 3 for external analyzers, without pulling an image: a Debian rootfs made with
# debootstrap from Debian's packages (needs root and the debootstrap package), loaded with `docker import` as
# the base (kept: later runs only rebuild the service layer), then Dockerfile.analysis-svc-python on top.
#
# Env: ANALYSIS_PYTHON_IMAGE (openir/analysis-svc:dev-python), PYTHON_BASE (openir/python-base:bookworm),
# DEBIAN_SUITE (bookworm), DEBIAN_MIRROR (http://deb.debian.org/debian), PYTHON_PACKAGES
# (python3,python3-requests,ca-certificates), REBUILD_BASE=1 makes the base again, GO, DOCKER.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
GO=${GO:-go}
DOCKER=${DOCKER:-docker}
ANALYSIS_PYTHON_IMAGE=${ANALYSIS_PYTHON_IMAGE:-openir/analysis-svc:dev-python}
PYTHON_BASE=${PYTHON_BASE:-openir/python-base:bookworm}
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PYTHON_PACKAGES=${PYTHON_PACKAGES:-python3,python3-requests,ca-certificates}

work=$(mktemp -d "${TMPDIR:-/tmp}/openir-python.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ "${REBUILD_BASE:-0}" = 1 ] || ! "$DOCKER" image inspect "$PYTHON_BASE" >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || { echo "debootstrap needs root: sudo make image-analysis-python" >&2; exit 1; }
	command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install debootstrap" >&2; exit 1; }
	echo "== debootstrap $DEBIAN_SUITE ($PYTHON_PACKAGES) -> $PYTHON_BASE"
	rfs=$work/rootfs
	debootstrap --variant=minbase --include="$PYTHON_PACKAGES" "$DEBIAN_SUITE" "$rfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
		{ tail -20 "$work/debootstrap.log" >&2; exit 1; }
	# The non-root user and the service's folders; /tmp is already 1777.
	echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin' >>"$rfs/etc/passwd"
	echo 'nonroot:x:65532:' >>"$rfs/etc/group"
	echo 'nonroot:!:20000:0:99999:7:::' >>"$rfs/etc/shadow"
	install -d -o 65532 -g 65532 -m 0750 "$rfs/data" "$rfs/home/nonroot"
	# Smaller: no package caches, lists, logs, manuals, locales or docs (copyright files stay).
	rm -rf "$rfs"/var/cache/apt/archives/*.deb "$rfs"/var/cache/apt/*.bin "$rfs"/var/lib/apt/lists/* \
		"$rfs"/var/log/* "$rfs"/usr/share/man "$rfs"/usr/share/info "$rfs"/usr/share/locale "$rfs"/debootstrap
	find "$rfs/usr/share/doc" -type f ! -name copyright -delete
	tar --numeric-owner --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -C "$rfs" -c . |
		"$DOCKER" import \
			--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			--change 'CMD ["python3"]' \
			--message "debootstrap --variant=minbase $DEBIAN_SUITE + $PYTHON_PACKAGES" - "$PYTHON_BASE" >/dev/null
	rm -rf "$rfs"
fi

echo "== analysis-svc -> $ANALYSIS_PYTHON_IMAGE (on $PYTHON_BASE)"
(cd "$root" && CGO_ENABLED=0 GOOS=linux "$GO" build -trimpath -ldflags='-s -w' -o "$work/analysis-svc" ./analysis-svc/cmd/analysis-svc)
cp "$root/deploy/docker/Dockerfile.analysis-svc-python" "$work/"
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
"$DOCKER" build --quiet -f "$work/Dockerfile.analysis-svc-python" --build-arg "PYTHON_BASE=$PYTHON_BASE" \
	--label org.opencontainers.image.title=analysis-svc --label "org.opencontainers.image.revision=$rev" \
	-t "$ANALYSIS_PYTHON_IMAGE" "$work" >/dev/null
for image in "$PYTHON_BASE" "$ANALYSIS_PYTHON_IMAGE"; do
	size=$("$DOCKER" image inspect -f '{{.Size}}' "$image")
	printf '%s: %s MB\n' "$image" "$(awk -v s="$size" 'BEGIN{printf "%.1f", s/1000000}')"
done
