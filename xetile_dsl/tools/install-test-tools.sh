#!/usr/bin/env bash
# Install the tools that prove our SPIR-V compiles to real Intel GPU machine code.
#
#  * iga64 from Debian 12's `libigc-tools` (apt-get install; the only system change).
#  * A *current* ocloc + IGC from Debian sid, fetched with apt-get using a PRIVATE
#    sources list / state / cache and unpacked with `dpkg-deb -x` into a tools folder
#    together with sid's own C/C++ runtime.  dpkg's database is never touched.
#  * `<tools>/bin/ocloc`: a wrapper that runs ocloc through the folder's own ld-linux.
#
# Idempotent; run as root by CI on a fresh Debian 12 machine.  Without apt-get it prints
# a message and exits 0.  See docs/tools.md and the Xe codegen reference §0.
#
# Environment:
#   XETILE_TOOLS_DIR   tools folder (default <repo>/tools-cache/igc in a checkout;
#                      `python -m xetile_dsl install-tools` passes the folder the package reads)
#   XETILE_SID_PINS    space-separated `pkg=version` pins for sid packages (sid moves)
#   XETILE_SID_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#   XETILE_SKIP_IGA=1  do not apt-get install libigc-tools
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"   # this file is <repo>/xetile_dsl/tools/
TOOLS="${XETILE_TOOLS_DIR:-$REPO/tools-cache/igc}"
MIRROR="${XETILE_SID_MIRROR:-http://deb.debian.org/debian}"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
ROOT="$TOOLS/root"          # unpacked packages
PRIV="$TOOLS/apt"           # private apt sources/state/cache
DEBS="$TOOLS/debs"          # downloaded .deb files
LIBDIR="$ROOT/usr/lib/x86_64-linux-gnu"
LOADER="$LIBDIR/ld-linux-x86-64.so.2"

# The ocloc/IGC packages, then sid's runtime they need (libigc2 needs libc6 >= 2.43).
SID_PACKAGES=(intel-ocloc libigc2 libigdfcl2
              libc6 libstdc++6 libgcc-s1 zlib1g libzstd1)

log() { echo "[install-test-tools] $*"; }

# Print the apt-get options that make apt use only our private sid configuration.
apt_private_opts() {
    echo "-o Dir::Etc::SourceList=$PRIV/sources.list -o Dir::Etc::SourceParts=/dev/null" \
         "-o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null" \
         "-o Dir::State::Lists=$PRIV/lists -o Dir::Cache=$PRIV/cache" \
         "-o Dir::State::status=/dev/null -o APT::Sandbox::User=root" \
         "-o Debug::NoLocking=1 -o APT::Get::List-Cleanup=0 -q"
}

install_iga64() {
    if [[ "${XETILE_SKIP_IGA:-0}" == 1 ]]; then log "skipping iga64 (XETILE_SKIP_IGA=1)"; return; fi
    if command -v iga64 >/dev/null; then log "iga64 present: $(command -v iga64)"; return; fi
    if [[ $(id -u) -ne 0 ]]; then log "not root: cannot apt-get install libigc-tools (iga64); skipped"; return; fi
    log "apt-get install libigc-tools (Debian 12 iga64)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends libigc-tools \
        || { apt-get update -q && apt-get install -y -q --no-install-recommends libigc-tools; }
}

# Write the private sources.list and directories; refresh sid's package lists.
apt_update_private() {
    mkdir -p "$PRIV/lists/partial" "$PRIV/cache/archives/partial" "$DEBS"
    local signed=""
    [[ -r "$KEYRING" ]] && signed="[signed-by=$KEYRING] "
    echo "deb ${signed}$MIRROR sid main" > "$PRIV/sources.list"
    log "apt-get update (private sid sources list in $PRIV)"
    # shellcheck disable=SC2046
    apt-get $(apt_private_opts) update
}

# Download the named packages (pins in XETILE_SID_PINS override) into $DEBS.
download_debs() {
    local pkgs=() p pin
    for p in "$@"; do
        pin=""
        for pin in ${XETILE_SID_PINS:-}; do [[ "${pin%%=*}" == "$p" ]] && break; pin=""; done
        pkgs+=("${pin:-$p}")
    done
    log "apt-get download ${pkgs[*]}"
    # shellcheck disable=SC2046
    (cd "$DEBS" && apt-get $(apt_private_opts) download "${pkgs[@]}")
}

unpack_debs() {
    mkdir -p "$ROOT"
    local deb
    for deb in "$DEBS"/*.deb; do dpkg-deb -x "$deb" "$ROOT"; done
}

# Sonames that some unpacked ELF object needs but the private root cannot provide
# (unresolved, or resolved to a system library outside the tools folder).
missing_libs() {
    local f
    for f in "$ROOT"/usr/bin/ocloc-* "$LIBDIR"/libocloc.so "$LIBDIR"/libigc.so.* \
             "$LIBDIR"/libigdfcl.so.* "$LIBDIR"/libopencl-clang.so.* "$LIBDIR"/libiga64.so.*; do
        [[ -e "$f" ]] || continue
        "$LOADER" --list --library-path "$LIBDIR" "$f" 2>/dev/null \
            | awk -v root="$ROOT" '/=>/ && ($3 == "not" || index($3, root) != 1) {print $1}' || true
    done | sort -u
}

# Map a missing soname to the sid package that ships it (apt-file is not needed:
# the common cases are the runtime libraries, whose package name follows the soname).
soname_to_package() {
    local so="$1" base
    base="${so%.so*}"; base="${base#lib}"
    local num="${so##*.so.}"
    case "$base" in
        stdc++) echo libstdc++6 ;; gcc_s) echo libgcc-s1 ;; z) echo zlib1g ;;
        *) echo "lib${base}${num}" ;;
    esac
}

write_wrapper() {
    local ocloc
    ocloc="$(ls "$ROOT"/usr/bin/ocloc-* 2>/dev/null | sort -V | tail -1)"
    [[ -n "$ocloc" ]] || { log "ERROR: no ocloc binary in $ROOT/usr/bin"; exit 1; }
    mkdir -p "$TOOLS/bin"
    cat > "$TOOLS/bin/ocloc" <<EOF
#!/bin/sh
# Generated by scripts/install-test-tools.sh: run sid's ocloc with sid's own loader and libs.
R="\$(cd "\$(dirname "\$0")/.." && pwd)/root"
L="\$R/usr/lib/x86_64-linux-gnu"
exec "\$L/ld-linux-x86-64.so.2" --library-path "\$L" "\$R/usr/bin/$(basename "$ocloc")" "\$@"
EOF
    chmod +x "$TOOLS/bin/ocloc"
}

record_versions() {
    local deb out="$TOOLS/VERSIONS"
    {
        echo "# Packages unpacked into $ROOT (Debian sid), written $(date -u +%F)"
        for deb in "$DEBS"/*.deb; do dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb"; done
        echo "# ocloc --version"
        "$TOOLS/bin/ocloc" --version 2>&1 | head -3 || true
        echo "# iga64 (Debian 12 libigc-tools)"
        if command -v dpkg-query >/dev/null; then dpkg-query -W libigc-tools 2>/dev/null || echo "not installed"; fi
    } > "$out"
    log "versions recorded in $out:"; sed 's/^/    /' "$out"
}

ocloc_works() { [[ -x "$TOOLS/bin/ocloc" ]] && "$TOOLS/bin/ocloc" --version >/dev/null 2>&1; }

main() {
    if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
        log "apt-get/dpkg-deb not available: nothing installed (ISA tests will skip)."
        exit 0
    fi
    install_iga64
    if ocloc_works && [[ "${XETILE_FORCE:-0}" != 1 ]]; then
        log "ocloc already installed in $TOOLS (set XETILE_FORCE=1 to refetch)"
        record_versions; exit 0
    fi
    apt_update_private
    download_debs "${SID_PACKAGES[@]}"
    unpack_debs
    local round missing pkgs so
    for round in 1 2 3; do          # fetch whatever the loader still cannot find
        missing="$(missing_libs)"
        [[ -z "$missing" ]] && break
        pkgs=(); for so in $missing; do pkgs+=("$(soname_to_package "$so")"); done
        log "missing libraries: $missing -> fetching ${pkgs[*]}"
        download_debs "${pkgs[@]}"; unpack_debs
    done
    [[ -z "$(missing_libs)" ]] || { log "ERROR: still missing: $(missing_libs)"; exit 1; }
    write_wrapper
    ocloc_works || { log "ERROR: $TOOLS/bin/ocloc does not run"; exit 1; }
    record_versions
    log "done: $TOOLS/bin/ocloc"
}

main "$@"
