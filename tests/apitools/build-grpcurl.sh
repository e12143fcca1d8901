#!/usr/bin/env bash
# Builds grpcurl (github.com/fullstorydev/grpcurl/cmd/grpcurl, a pinned release) from its Go module into
# .local/bin/grpcurl, for the API server's tests of its gRPC reflection and health services. Does nothing
# when it was already built from the same version with the same Go toolchain.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/.local/bin"
stamp="$out/.grpcurl.stamp"
version=v1.9.4

# `go install pkg@version` builds outside any module, from the release's own go.mod and go.sum.
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
want="$( (echo "$version"; cat "$here/build-grpcurl.sh"; go version) | sha256sum | cut -d' ' -f1)"
if [ -x "$out/grpcurl" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "grpcurl: up to date in $out"
  exit 0
fi

mkdir -p "$out"
echo "grpcurl: building $version from its Go module"
start=$(date +%s)
rm -f "$stamp"
GOBIN="$out" go install -trimpath -ldflags="-s -w -X main.version=$version" \
  "github.com/fullstorydev/grpcurl/cmd/grpcurl@$version"
echo "$want" > "$stamp"
echo "grpcurl: built in $(( $(date +%s) - start ))s"
