#!/usr/bin/env bash
# A cold CI run, as on a new machine: a fresh clone of this repository's HEAD (what is committed, nothing else),
# run by .ci/run with CI=true in a fresh virtual environment, with HOME, GOPATH, GOMODCACHE, GOCACHE,
# XDG_CACHE_HOME, XDG_CONFIG_HOME, CARGO_HOME (the crates; the Rust toolchain stays the machine's, RUSTUP_HOME), the
# pip cache and pyhpa's control-plane cache all new empty folders: nothing a
# warm machine holds (the Go module and build caches, ~/.cache/pyhpa, installed packages) can hide a missing
# install step. Prints the wall time at the end and exits with .ci/run's code.
#
#   tools/cold_ci.sh                 # clone HEAD of the repository this script is in
#   tools/cold_ci.sh --keep          # keep the temporary folder afterwards (its path is printed)
#   tools/cold_ci.sh --clone-only    # make the clone and the empty caches, print the environment, run nothing
#
# Needs git, a Python 3.11+ with venv, Go 1.26 on PATH (or /usr/local/go/bin) and network access to PyPI, the Go
# module proxy and Debian's mirror (.ci/run installs Debian's prometheus). A cold run takes 30-60 minutes on two cores.
set -euo pipefail

keep=0
run=1
for arg in "$@"; do
  case "$arg" in
    --keep) keep=1 ;;
    --clone-only) run=0; keep=1 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: tools/cold_ci.sh: unknown argument $arg (known: --keep, --clone-only, --help)" >&2; exit 2 ;;
  esac
done

repo="$(cd "$(dirname "$0")/.." && pwd)"
python="$(command -v python3 || command -v python)"
python="$("$python" -c 'import sys; print(sys.executable)')"   # the real interpreter, not a shim that reads HOME
go="$(command -v go || true)"
if [ -z "$go" ] && [ -x /usr/local/go/bin/go ]; then go=/usr/local/go/bin/go; fi
if [ -z "$go" ]; then
  echo "error: tools/cold_ci.sh: go is not on PATH (install Go 1.26 or newer: https://go.dev/dl/)" >&2
  exit 2
fi

root="$(mktemp -d "${TMPDIR:-/tmp}/pyhpa-cold-ci.XXXXXX")"
if [ "$keep" = 0 ]; then
  # the Go module cache is read-only on disk: make it writable before removing it
  trap 'chmod -R u+w "$root" 2>/dev/null; rm -rf "$root"' EXIT
fi
mkdir -p "$root"/{home,gopath,gomodcache,gocache,xdg-cache,xdg-config,pip-cache,cargo-home,tmp}
git clone -q --no-local "$repo" "$root/clone"
# as a new machine has it: the clone beside a copy of ../shared (the tests must not need it; nothing reads it)
if [ -d "$repo/../shared" ]; then cp -r "$repo/../shared" "$root/shared"; fi
"$python" -m venv "$root/venv"

# the machine's Rust toolchain (as its Go: rustup keeps it under the real HOME), with an empty crate cache
if [ -z "${RUSTUP_HOME:-}" ] && [ -d "$HOME/.rustup" ]; then export RUSTUP_HOME="$HOME/.rustup"; fi
export CARGO_HOME="$root/cargo-home"
export HOME="$root/home"
export GOPATH="$root/gopath"
export GOMODCACHE="$root/gomodcache"
export GOCACHE="$root/gocache"
export XDG_CACHE_HOME="$root/xdg-cache"
export XDG_CONFIG_HOME="$root/xdg-config"
export PIP_CACHE_DIR="$root/pip-cache"
export TMPDIR="$root/tmp"
unset PYHPA_CONTROL_PLANE_CACHE PYHPA_CONTROL_PLANE_UNAVAILABLE VIRTUAL_ENV PYTHONPATH GOFLAGS PYENV_VERSION
export PATH="$root/venv/bin:$(dirname "$go"):$PATH"
export CI=true

echo "cold CI in $root (commit $(git -C "$root/clone" rev-parse --short HEAD)); python $(python --version 2>&1 | cut -d' ' -f2), $(go version | cut -d' ' -f3); caches empty: $(du -sh "$GOMODCACHE" "$GOCACHE" "$PIP_CACHE_DIR" | awk '{print $1}' | paste -sd' ')"
if [ "$run" = 0 ]; then
  echo "HOME=$HOME GOPATH=$GOPATH GOMODCACHE=$GOMODCACHE GOCACHE=$GOCACHE XDG_CACHE_HOME=$XDG_CACHE_HOME PATH=$PATH"
  exit 0
fi
started=$(date +%s)
set +e
(cd "$root/clone" && bash .ci/run)
rc=$?
set -e
took=$(( $(date +%s) - started ))
echo "cold CI: exit code $rc after $((took / 60)) min $((took % 60)) s (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
exit "$rc"
