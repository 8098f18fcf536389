#!/usr/bin/env bash
# scripts/release.sh: builds feedd's release binaries, reproducibly.
#
# Usage:
#   scripts/release.sh [-o DIR] [REF]              REF: a commit (default HEAD)
#   scripts/release.sh --snapshot [-o DIR] [REF]   a build of any commit, named as a snapshot
#   scripts/release.sh --check [REF]               the checks below only: build nothing
#
# A release is built only from a release's commit (CONTRIBUTING.md,
# "Cutting a release"); it refuses, building nothing:
#   - a version with a pre-release suffix (the source says 0.3.0-dev between
#     releases): cut the release first;
#   - a repository with changes not committed (they would not be in the
#     build, yet whoever runs it may think they are);
#   - a commit whose CHANGELOG.md disagrees with its version: the newest
#     section must be "## [VERSION] - YYYY-MM-DD", and "## [Unreleased]",
#     if there, empty.
# --snapshot builds whatever REF is, changes or not (they are not in it),
# and names it feedd-VERSION-snapshot.COMMIT12: for tests and trials, never
# for users.
#
# It clones the repository at REF into a temporary directory (so nothing
# uncommitted goes into a release, and the binary records REF's commit as
# clean) and builds cmd/feedd there for each target in TARGETS:
#
#   CGO_ENABLED=0 GOOS=linux GOARCH=... go build -trimpath -buildvcs=true \
#       -ldflags='-s -w -buildid=' -o DIR/feedd-VERSION-linux-ARCH ./cmd/feedd
#
#   CGO_ENABLED=0   static: no libc, runs on any Linux of that architecture,
#                   in an empty root too (deploy/Dockerfile is FROM scratch)
#   -trimpath       no path of the build machine in the binary
#   -buildvcs=true  the commit, its time and "clean" recorded (feedd version),
#                   the same from any clone of the same commit
#   -buildid=       no build id; with the above, the same commit built by the
#                   same Go version gives the same bytes
#
# DIR (default ./dist) gets the binaries, SHA256SUMS over them, and
# docker/ARCH/: the build context of deploy/Dockerfile (the binary as
# `feedd`, the host's /etc/ssl/certs/ca-certificates.crt, an empty data/).
# Build an image with: docker build -t feedd:VERSION DIR/docker/amd64
#
# Environment: TARGETS (default "linux/amd64 linux/arm64"); GOTOOLCHAIN is
# set to local, so the installed Go builds it (its version goes in the
# binary: the same bytes need the same Go version). Exit status: non-zero
# on any failure or refusal.
set -euo pipefail

die() { printf 'release.sh: error: %s\n' "$*" >&2; exit 1; }

usage="usage: scripts/release.sh [--snapshot | --check] [-o DIR] [REF]"
out=dist
snapshot=0 check=0
case ${1:-} in
--snapshot) snapshot=1 && shift ;;
--check) check=1 && shift ;;
esac
while getopts o: opt; do
	case $opt in
	o) out=$OPTARG ;;
	*) die "$usage" ;;
	esac
done
shift $((OPTIND - 1))
ref=${1:-HEAD}
[[ $# -le 1 ]] || die "$usage"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v go >/dev/null || export PATH="/usr/local/go/bin:$PATH"
commit=$(git -C "$repo" rev-parse --verify "$ref^{commit}") || die "no commit $ref"
certs=/etc/ssl/certs/ca-certificates.crt
[[ -r $certs ]] || die "$certs not found (Debian: apt-get install ca-certificates)"

work=$(mktemp -d "${TMPDIR:-/tmp}/feedd-release.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
git clone -q --no-checkout "$repo" "$work/src"
git -C "$work/src" -c advice.detachedHead=false checkout -q "$commit"

version=$(sed -n 's/^const Release = "\(.*\)"$/\1/p' "$work/src/version.go" 2>/dev/null)
# 0.1.0 said its version in cmd/feedd/version.go
[[ -n $version ]] || version=$(sed -n 's/^const release = "\(.*\)"$/\1/p' "$work/src/cmd/feedd/version.go" 2>/dev/null)
[[ -n $version ]] || die "no Release constant in version.go at $commit"
if ((snapshot)); then
	version=$version-snapshot.${commit:0:12}
else
	[[ $version != *-* ]] || die "$commit is version $version, not a release: cut the release first (CONTRIBUTING.md, \"Cutting a release\"), or build a --snapshot"
	[[ -z $(git -C "$repo" status --porcelain --untracked-files=no) ]] ||
		die "$repo has changes not committed: commit or stash them (a release is built from $commit alone), or build a --snapshot"
	changelog=$work/src/CHANGELOG.md
	newest=$(grep -m1 '^## \[' "$changelog" | grep -v '^## \[Unreleased\]' || true)
	if [[ -z $newest ]]; then
		newest=$(grep '^## \[' "$changelog" | sed -n 2p)
		unreleased=$(awk '/^## \[Unreleased\]/ {on=1; next} /^## \[/ {on=0} on && NF' "$changelog")
		[[ -z $unreleased ]] || die "CHANGELOG.md at $commit still lists changes under [Unreleased]: move them into the section of $version"
	fi
	[[ $newest =~ ^'## ['"$version"'] - '[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] ||
		die "CHANGELOG.md at $commit does not agree with version $version: its newest section is \"$newest\", want \"## [$version] - YYYY-MM-DD\""
fi
if ((check)); then
	printf 'release.sh: %s (commit %s) can be released\n' "$version" "$commit" >&2
	exit 0
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
names=()
for target in ${TARGETS:-linux/amd64 linux/arm64}; do
	goos=${target%/*} goarch=${target#*/}
	name=feedd-$version-$goos-$goarch
	(cd "$work/src" && env CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" GOFLAGS=-mod=readonly GOTOOLCHAIN=local \
		go build -trimpath -buildvcs=true -ldflags='-s -w -buildid=' -o "$out/$name" ./cmd/feedd)
	names+=("$name")
	ctx=$out/docker/$goarch
	rm -rf -- "$ctx"
	mkdir -p "$ctx/data"
	cp "$out/$name" "$ctx/feedd"
	cp "$certs" "$ctx/ca-certificates.crt"
	cp "$work/src/deploy/Dockerfile" "$ctx/Dockerfile"
done
(cd "$out" && sha256sum "${names[@]}" >SHA256SUMS)
printf 'release.sh: feedd %s (commit %s) in %s:\n' "$version" "$commit" "$out" >&2
cat "$out/SHA256SUMS" >&2
