#!/usr/bin/env bash
# The Debian package, checked as Debian's tools and a careful administrator would check it, without
# touching this machine's own packages: one PASS/FAIL line per check and a closing
# "package-test: N passed, N failed, N skipped".
#
#  1. scripts/package.sh builds the .deb and its debug symbols (.ddeb); the binary is stripped and
#     names no path of the build machine; lintian reports no error or warning that
#     packaging/debian/linerate.lintian-overrides does not justify.
#  2. A second build of the same tree, copied to another directory, with another target directory
#     and cargo's home at another path, gives byte-identical packages. It is a second release
#     build (minutes); LINERATE_PACKAGE_REPRO=0 leaves it out (counted as skipped).
#  3. `cargo install --path crates/linerate-cli` works (it reuses the first build).
#  4. A throwaway system: this machine's root under an overlay (a tmpfs on top) in a mount
#     namespace of the test's own, booted with systemd as PID 1 in a container (systemd-nspawn,
#     with a network namespace of its own). scripts/package-test-system.sh runs in it: install,
#     files, man pages, apropos, completion, the unit, the service under its sandbox answering
#     clients, removal, purge. Whatever it changes dies with the namespace, so the test passes
#     whether or not linerate is installed here, and leaves this machine as it was (checked).
#
# Needs root (namespaces, a container). Without root, or left out with LINERATE_PACKAGE_TEST=0,
# it skips, says why, appends "package-test: REASON" to $LINERATE_SKIP_LOG when set, and fails
# instead when LINERATE_REQUIRE_PRIVILEGED is set (and not 0), as linerate-testkit does.
# scripts/setup-tests.sh installs what it uses (cargo-deb, cargo-about, lintian, man-db,
# bash-completion, systemd-container). Every step is bounded in time.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/release-env.sh

passed=0
failed=0
skipped=0
pass() {
    echo "PASS $1"
    passed=$((passed + 1))
}
fail() {
    echo "FAIL $1"
    failed=$((failed + 1))
}
summary() {
    echo "package-test: $passed passed, $failed failed, $skipped skipped"
}

# A check that cannot run here: counted as skipped, or failed where skips are forbidden.
skip() {
    echo "SKIP package-test: $1"
    if [ -n "${LINERATE_SKIP_LOG:-}" ]; then
        echo "package-test: $1" >>"$LINERATE_SKIP_LOG"
    fi
    if [ -n "${LINERATE_REQUIRE_PRIVILEGED:-}" ] && [ "${LINERATE_REQUIRE_PRIVILEGED}" != 0 ]; then
        fail "package-test: skipped, but LINERATE_REQUIRE_PRIVILEGED=1 requires it to run"
    else
        skipped=$((skipped + 1))
    fi
}

# --- inside the test's mount namespace: the throwaway system ----------------------------------
# scripts/package-test.sh --system WORK DEB (run by the test itself through unshare).
system() {
    local work="$1" deb="$2" root leader state
    root="$work/system/root"
    set -e
    mkdir -p "$work/system"
    mount -t tmpfs -o size=4g,mode=0755 linerate-package-test "$work/system"
    mkdir "$work/system/upper" "$work/system/work" "$root"
    mount -t overlay linerate-package-test \
        -o "lowerdir=/,upperdir=$work/system/upper,workdir=$work/system/work" "$root"
    # systemd-nspawn keeps locks and mount propagation under /run/systemd/nspawn: in a tmpfs of
    # this namespace, not in the machine's /run.
    mount -t tmpfs -o mode=0755 linerate-package-test /run
    mkdir -p "$root/var/cache/linerate-package-test"
    cp "$deb" scripts/package-test-system.sh "$root/var/cache/linerate-package-test/"
    # The marker package-test-system.sh requires before it installs anything.
    echo "linerate package test $$" >"$root/etc/linerate-package-test"
    # Timers (apt-daily, ...) have no business in the test; nor have waits for a network the
    # container does not have (linerate-serve.service is After=network-online.target).
    local u
    for u in timers.target systemd-networkd-wait-online.service \
        NetworkManager-wait-online.service ifupdown-wait-online.service; do
        ln -sfn /dev/null "$root/etc/systemd/system/$u"
    done
    set +e
    systemd-nspawn -D "$root" -M "linerate-test-$$" --register=no --keep-unit --link-journal=no \
        --private-network --quiet --boot -- --unit=basic.target </dev/null >"$work/nspawn.log" 2>&1 &
    nspawn=$!
    # Stopped (a time-out, Ctrl-C): the container goes too, and the namespace with it.
    trap 'kill "$nspawn" 2>/dev/null' EXIT
    trap 'exit 1' INT TERM
    leader=
    for _ in $(seq 120); do
        leader=$(pgrep -P "$nspawn" -x systemd | head -n 1)
        if [ -n "$leader" ]; then
            state=$(timeout 10 nsenter -t "$leader" -a systemctl is-system-running 2>/dev/null)
            [[ "$state" =~ ^(running|degraded)$ ]] && break
        fi
        sleep 0.5
    done
    if [[ ! "${state:-}" =~ ^(running|degraded)$ ]]; then
        echo "FAIL boot the throwaway system (systemd-nspawn): ${state:-no systemd}; $(tail -n 5 "$work/nspawn.log")"
        echo "package-test-system: 0 passed, 1 failed"
    else
        echo "note: throwaway system booted (systemd $state, overlay over /, private network)"
        timeout 900 nsenter -t "$leader" -a -- bash /var/cache/linerate-package-test/package-test-system.sh \
            "/var/cache/linerate-package-test/$(basename "$deb")"
        timeout 30 nsenter -t "$leader" -a systemctl poweroff >/dev/null 2>&1
    fi
    for _ in $(seq 60); do
        kill -0 "$nspawn" 2>/dev/null || break
        sleep 0.5
    done
    kill "$nspawn" 2>/dev/null
    wait "$nspawn" 2>/dev/null
    return 0
}
if [ "${1:-}" = --system ]; then
    system "$2" "$3"
    exit 0
fi

# --- on the machine ----------------------------------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
    skip "needs root (a mount namespace and a container for the throwaway system)"
    summary
    [ "$failed" -eq 0 ]
    exit
fi
if [ "${LINERATE_PACKAGE_TEST:-}" = 0 ]; then
    skip "left out with LINERATE_PACKAGE_TEST=0"
    summary
    [ "$failed" -eq 0 ]
    exit
fi
for tool in cargo-deb:"cargo deb --version" cargo-about:"cargo about --version" \
    lintian:"lintian --version" systemd-nspawn:"systemd-nspawn --version" \
    unshare:"unshare --version" nsenter:"nsenter --version" readelf:"readelf --version"; do
    if ! ${tool#*:} >/dev/null 2>&1; then
        fail "${tool%%:*} is missing: run scripts/setup-tests.sh"
        summary
        exit 1
    fi
done

work=$(mktemp -d /tmp/linerate-package-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
# This machine's linerate, as found: the test must leave it so.
machine_state() {
    dpkg-query -W -f='${Status} ${Version}\n' linerate 2>/dev/null || echo "not installed"
    local f
    for f in /usr/bin/linerate /etc/default/linerate /usr/lib/systemd/system/linerate-serve.service /var/lib/private/linerate; do
        [ -e "$f" ] && echo "$f $(stat -c '%s %Y' "$f")"
    done
}
machine_state >"$work/machine.before"

# The same file dates in both builds, from the commit (package.sh's own default).
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || stat -c %Y CHANGELOG.md)}
export SOURCE_DATE_EPOCH

# --- 1. build, strip, paths, lintian ------------------------------------------------------------
start=$SECONDS
if ! deb=$(timeout 1800 scripts/package.sh 2>"$work/build.log" | tail -n 1) || [ ! -f "$deb" ]; then
    tail -n 30 "$work/build.log" >&2
    fail "build the .deb (scripts/package.sh)"
    summary
    exit 1
fi
ddeb=$(ls "$(dirname "$deb")"/linerate-dbgsym_*.ddeb 2>/dev/null | head -n 1)
pass "build the .deb: $deb ($(du -h "$deb" | cut -f1)), debug symbols in ${ddeb:-nothing} ($([ -n "$ddeb" ] && du -h "$ddeb" | cut -f1)), $((SECONDS - start)) s"

mkdir "$work/deb"
dpkg-deb -x "$deb" "$work/deb"
bin="$work/deb/usr/bin/linerate"
# (.debug_gdb_scripts is not debug information: rustc's loaded section naming gdb's helpers.)
debug_sections=$(readelf -S -W "$bin" | grep -c -E ' \.(z?debug_(info|line|str|abbrev|ranges|rnglists|loc|loclists|aranges|frame)|symtab) ')
build_id=$(readelf -n "$bin" | sed -n 's/.*Build ID: *//p')
if [ "$debug_sections" = 0 ] && [ -n "$build_id" ] && [ -n "$ddeb" ] &&
    dpkg-deb -c "$ddeb" | grep -q "usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug"; then
    pass "the binary is stripped ($(du -h "$bin" | cut -f1)); its debug symbols are in the .ddeb under its build id ${build_id:0:12}..."
else
    fail "the binary keeps $debug_sections debug or symbol sections, or the .ddeb lacks /usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug"
fi
# Paths of this build machine: the tree, the target directory, cargo's home and registry, rustup.
home="${CARGO_HOME:-$HOME/.cargo}"
paths=("$PWD/" "$(pwd -P)/" "$(cd "${CARGO_TARGET_DIR:-target}" && pwd -P)/" "$home/" "$HOME/.rustup/" /registry/src/ /target/release/build/)
found=
for p in "${paths[@]}"; do
    n=$(grep -a -o -F -- "$p" "$bin" | wc -l)
    [ "$n" -eq 0 ] || found+=" $p ($n times)"
done
if [ -z "$found" ]; then
    pass "the binary names no path of the build (${paths[*]})"
else
    fail "the binary names build paths:$found"
fi

# lintian judges the package; the overrides it ships say why each remaining tag is there.
timeout 600 lintian --fail-on error,warning --display-info --tag-display-limit 0 "$deb" >"$work/lintian.log" 2>&1
lintian_rc=$?
overrides=packaging/debian/linerate.lintian-overrides
# Every override line is preceded by a comment giving its reason.
undocumented=$(awk '/^#/ { reason = 1; next } NF && !reason { print } NF { reason = 0 }' "$overrides")
tags=$(grep -c '^[EWI]: ' "$work/lintian.log")
overridden=$(grep -c '^[a-z]' "$overrides")
if [ "$lintian_rc" -eq 0 ] && ! grep -q '^[EW]: ' "$work/lintian.log" && [ -z "$undocumented" ]; then
    pass "lintian: no error or warning ($tags info tags; $overridden overrides, each with its reason, in $overrides)"
else
    fail "lintian (exit $lintian_rc): $(grep '^[EW]: ' "$work/lintian.log" | head -n 20 | tr '\n' ';')${undocumented:+ overrides without a reason: $undocumented}"
fi
grep -E '^[EWIPX]: ' "$work/lintian.log" | sed 's/^/  lintian: /'

# --- 2. a second build, elsewhere: byte-identical ------------------------------------------------
if [ "${LINERATE_PACKAGE_REPRO:-}" = 0 ]; then
    skip "the reproducibility check is left out with LINERATE_PACKAGE_REPRO=0"
else
    copy="$work/elsewhere/tree"
    mkdir -p "$copy" "$work/elsewhere/cargo-home" "$work/elsewhere/target"
    # The tree as it is (uncommitted changes included), without its build output.
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files -z --cached --others --exclude-standard |
            tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$copy"
    else
        tar --exclude=./target -cf - . | tar -xf - -C "$copy"
    fi
    start=$SECONDS
    # Cargo's home at another path too (a bind mount of the same one: the crates are not
    # fetched again), in a mount namespace that ends with the build.
    (cd "$copy" && timeout 2400 unshare --mount --propagation private -- bash -c \
        'mount --bind "$1" "$2" && CARGO_HOME="$2" CARGO_TARGET_DIR="$3" scripts/package.sh' \
        _ "$home" "$work/elsewhere/cargo-home" "$work/elsewhere/target") >"$work/elsewhere.out" 2>"$work/elsewhere.log"
    second=$((SECONDS - start))
    deb2=$(tail -n 1 "$work/elsewhere.out")
    ddeb2=$(ls "$work"/elsewhere/target/debian/linerate-dbgsym_*.ddeb 2>/dev/null | head -n 1)
    if [ ! -f "$deb2" ]; then
        tail -n 20 "$work/elsewhere.log" >&2
        fail "reproducible: the second build (in $copy) failed"
    elif cmp -s "$deb" "$deb2" && [ -n "$ddeb2" ] && cmp -s "$ddeb" "$ddeb2"; then
        pass "reproducible: a second build in another directory, target directory and cargo home gives byte-identical packages ($(sha256sum "$deb" | cut -c1-16)... .deb, .ddeb too; second build $second s)"
    else
        mkdir "$work/deb2"
        dpkg-deb -R "$deb2" "$work/deb2"
        dpkg-deb -e "$deb" "$work/deb/DEBIAN"
        fail "reproducible: the packages differ ($(cmp "$deb" "$deb2" | head -n 1); .ddeb: $(cmp "$ddeb" "$ddeb2" 2>&1 | head -n 1)); files that differ: $(diff -rq "$work/deb" "$work/deb2" 2>&1 | head -n 5 | tr '\n' ';')"
    fi
fi

# --- 3. cargo install --------------------------------------------------------------------------
# The other way to install: from source with cargo. The same target directory and flags reuse the
# package's build.
if (release_env && timeout 1800 cargo install --locked --quiet --path crates/linerate-cli \
    --root "$work/cargo-root" --target-dir "${CARGO_TARGET_DIR:-target}") 2>"$work/cargo-install.log" &&
    "$work/cargo-root/bin/linerate" --version | grep -q '^linerate '; then
    pass "cargo install --locked --path crates/linerate-cli"
else
    tail -n 20 "$work/cargo-install.log" >&2
    fail "cargo install --locked --path crates/linerate-cli"
fi

# --- 4. the throwaway system -------------------------------------------------------------------
timeout 1200 unshare --mount --propagation private -- "$0" --system "$work" "$deb" >"$work/system.log" 2>&1
grep -E '^(PASS|FAIL|SKIP|note:) ' "$work/system.log"
counts=$(sed -n 's/^package-test-system: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$work/system.log")
if [ -n "$counts" ]; then
    passed=$((passed + ${counts% *}))
    failed=$((failed + ${counts#* }))
else
    fail "the throwaway system did not finish: $(tail -n 10 "$work/system.log" | tr '\n' ';')"
fi

machine_state >"$work/machine.after"
if cmp -s "$work/machine.before" "$work/machine.after" && ! findmnt -rn -o TARGET | grep -q "$work"; then
    pass "this machine is as it was: linerate $(head -n 1 "$work/machine.after"), no mount left"
else
    fail "this machine changed: $(diff "$work/machine.before" "$work/machine.after" | tr '\n' ' ')"
fi

summary
[ "$failed" -eq 0 ]
