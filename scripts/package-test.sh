#!/usr/bin/env bash
# The Debian package, checked as Debian's tools and a careful administrator would check it, without
# touching this machine's own packages: one PASS/FAIL line per check and a closing
# "package-test: N passed, N failed, N skipped".
#
#  1. scripts/package.sh builds the portable binary, the .deb and its debug symbols (.ddeb), the
#     .rpm and the release tarball; the binary is stripped, names no path of the build machine
#     and needs no glibc symbol newer than 2.28 (`objdump -T`), which the .deb's Depends and the
#     .rpm's Requires state; lintian and rpmlint report nothing their override files do not
#     justify; the .rpm and the tarball hold the .deb's binary, man pages and completions; the
#     tarball's .sha256 checks. On Debian 11 (a debootstrap root, glibc 2.31), the binary
#     probes, diagnoses and measures, the .deb installs, and `--ssh` copies it to a far end with
#     nothing installed and leaves nothing (crates/linerate-cli/tests/portable_debian11.rs).
#  2. A second build of the same tree, copied to another directory, with another target directory
#     and cargo's home at another path, gives byte-identical packages. It is a second release
#     build (minutes); LINERATE_PACKAGE_REPRO=0 leaves it out (counted as skipped).
#  3. `cargo install --debug --path crates/linerate-cli` works (it reuses the test suite's build).
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
    rpmlint:"rpmlint --version" rpm:"rpm --version" objdump:"objdump --version" \
    debootstrap:"test -x /usr/sbin/debootstrap" \
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
timeout 2400 scripts/package.sh >"$work/built" 2>"$work/build.log"
built_rc=$?
deb=$(grep '\.deb$' "$work/built" | head -n 1)
ddeb=$(grep '\.ddeb$' "$work/built" | head -n 1)
rpm=$(grep '\.rpm$' "$work/built" | head -n 1)
tarball=$(grep '\.tar\.gz$' "$work/built" | head -n 1)
if [ "$built_rc" -ne 0 ] || [ ! -f "$deb" ] || [ ! -f "$rpm" ] || [ ! -f "$tarball" ]; then
    tail -n 30 "$work/build.log" >&2
    fail "build the packages (scripts/package.sh, exit $built_rc): $(tr '\n' ' ' <"$work/built")"
    summary
    exit 1
fi
size() { stat -c %s "$1" | awk '{ printf "%.1f MB", $1 / 1e6 }'; }
pass "build the packages in $((SECONDS - start)) s: $deb ($(size "$deb")), debug symbols in ${ddeb:-nothing} ($([ -n "$ddeb" ] && size "$ddeb")), $rpm ($(size "$rpm")), $tarball ($(size "$tarball"))"

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

# The glibc floor: the newest glibc symbol version the binary needs (what CI reads), at most
# 2.28, and what the packages' dependencies say.
floor=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
depends=$(dpkg-deb -f "$deb" Depends)
requires=$(rpm -qp --requires "$rpm" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
if [ -n "$floor" ] && [ "$(printf '%s\n' "$floor" GLIBC_2.28 | sort -V | tail -1)" = GLIBC_2.28 ] &&
    [[ "$depends" == *"libc6 (>= ${floor#GLIBC_})"* ]] && [ "$requires" = "$floor" ]; then
    pass "glibc floor: $floor (objdump -T BIN | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1), at most GLIBC_2.28; the .deb depends on $depends; the .rpm requires libc.so.6($floor)"
else
    fail "glibc floor: the binary needs ${floor:-nothing readable} (at most GLIBC_2.28); the .deb depends on '$depends'; the .rpm requires ${requires:-no GLIBC_ version}"
fi

# The .rpm: rpmlint, with packaging/rpm/rpmlint.toml's filters (each with its reason), and the
# .deb's files in it: the same binary, man pages and completions.
timeout 600 rpmlint -c packaging/rpm/rpmlint.toml "$rpm" >"$work/rpmlint.log" 2>&1
rpmlint_rc=$?
undocumented=$(awk '/^ *#/ { reason = 1; next } /^ *"/ && !reason { print } NF { reason = /^ *#/ }' packaging/rpm/rpmlint.toml)
if [ "$rpmlint_rc" -eq 0 ] && grep -q ' 0 errors, 0 warnings' "$work/rpmlint.log" && [ -z "$undocumented" ]; then
    pass "rpmlint: $(grep -o '[0-9]* packages and [0-9]* specfiles checked; 0 errors, 0 warnings.*' "$work/rpmlint.log")"
else
    fail "rpmlint (exit $rpmlint_rc): $(grep -E ': (E|W): |errors' "$work/rpmlint.log" | head -n 20 | tr '\n' ';')${undocumented:+ filters without a reason: $undocumented}"
fi
sed 's/^/  rpmlint: /' "$work/rpmlint.log"
mkdir "$work/rpm"
rpm2cpio "$rpm" | (cd "$work/rpm" && cpio -idm --quiet)
in_deb=$(cd "$work/deb" && find usr/share/man usr/lib/systemd -type f | sort | tr '\n' ' ')
in_rpm=$(cd "$work/rpm" && find usr/share/man usr/lib/systemd -type f | sort | tr '\n' ' ')
if cmp -s "$bin" "$work/rpm/usr/bin/linerate" && [ "$in_deb" = "$in_rpm" ] &&
    [ -f "$work/rpm/usr/share/bash-completion/completions/linerate" ] &&
    [ -f "$work/rpm/usr/share/zsh/site-functions/_linerate" ] &&
    [ -f "$work/rpm/usr/share/fish/vendor_completions.d/linerate.fish" ] &&
    [ -f "$work/rpm/usr/share/licenses/linerate/third-party-licenses.txt.gz" ] &&
    [ -f "$work/rpm/etc/default/linerate" ]; then
    pass "the .rpm holds the .deb's binary, $(echo "$in_rpm" | wc -w) man pages and unit, completions, licences and /etc/default/linerate"
else
    fail "the .rpm differs from the .deb: binary $(cmp "$bin" "$work/rpm/usr/bin/linerate" 2>&1 | head -n 1); deb [$in_deb] rpm [$in_rpm]"
fi

# The tarball: its checksum, ripgrep's layout, the .deb's binary.
name=$(basename "$tarball" .tar.gz)
mkdir "$work/tar"
tar -xzf "$tarball" -C "$work/tar"
t="$work/tar/$name"
if (cd "$(dirname "$tarball")" && sha256sum --quiet -c "$name.tar.gz.sha256") &&
    cmp -s "$bin" "$t/linerate" && [ -f "$t/doc/linerate.1" ] && [ -f "$t/doc/linerate-doctor.1" ] &&
    [ -f "$t/complete/linerate.bash" ] && [ -f "$t/complete/_linerate" ] && [ -f "$t/complete/linerate.fish" ] &&
    [ -f "$t/LICENSE-MIT" ] && [ -f "$t/LICENSE-APACHE" ] && [ -f "$t/README.md" ] &&
    "$t/linerate" --version | grep -q '^linerate '; then
    pass "the tarball: $name/ with the binary, doc/ ($(ls "$t/doc" | wc -l) files: man pages, changelog, unit), complete/ ($(ls "$t/complete" | wc -l) shells), licences, README; its .sha256 checks"
else
    fail "the tarball $tarball: checksum, layout or binary wrong: $(cd "$work/tar" && find . | head -n 30 | tr '\n' ' ')"
fi

# Debian 11: the portable binary and the .deb there, and --ssh to it with nothing installed.
start=$SECONDS
LINERATE_PORTABLE_BIN="$bin" LINERATE_DEB="$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")" \
    timeout 3000 cargo test --locked -q -p linerate --test portable_debian11 -- --ignored --test-threads=1 \
    >"$work/debian11.log" 2>&1
debian11_rc=$?
counts=$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$work/debian11.log" | tail -n 1)
if [ "$debian11_rc" -eq 0 ] && [ -n "$counts" ] && [ "${counts#* }" = 0 ]; then
    pass "Debian 11 (glibc 2.31): ${counts% *} tests of crates/linerate-cli/tests/portable_debian11.rs in $((SECONDS - start)) s ($(cat /var/cache/linerate-tests/debian11-minbase/.linerate-complete 2>/dev/null | tr -d '\n'))"
else
    grep -E '^(test |---- |thread )|panicked' "$work/debian11.log" | head -n 40 >&2
    fail "Debian 11 (exit $debian11_rc): $(grep -E '^test .* FAILED$' "$work/debian11.log" | tr '\n' ' ')"
fi

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
    deb2=$(grep '\.deb$' "$work/elsewhere.out" | head -n 1)
    ddeb2=$(grep '\.ddeb$' "$work/elsewhere.out" | head -n 1)
    rpm2=$(grep '\.rpm$' "$work/elsewhere.out" | head -n 1)
    tarball2=$(grep '\.tar\.gz$' "$work/elsewhere.out" | head -n 1)
    if [ ! -f "$deb2" ]; then
        tail -n 20 "$work/elsewhere.log" >&2
        fail "reproducible: the second build (in $copy) failed"
    elif cmp -s "$deb" "$deb2" && [ -n "$ddeb2" ] && cmp -s "$ddeb" "$ddeb2" && cmp -s "$rpm" "$rpm2" && cmp -s "$tarball" "$tarball2"; then
        pass "reproducible: a second build in another directory, target directory and cargo home gives byte-identical packages ($(sha256sum "$deb" | cut -c1-16)... .deb, .ddeb, .rpm and tarball too; second build $second s)"
    else
        mkdir "$work/deb2"
        dpkg-deb -R "$deb2" "$work/deb2"
        dpkg-deb -e "$deb" "$work/deb/DEBIAN"
        fail "reproducible: the packages differ ($(cmp "$deb" "$deb2" | head -n 1); .ddeb: $(cmp "$ddeb" "$ddeb2" 2>&1 | head -n 1); .rpm: $(cmp "$rpm" "$rpm2" 2>&1 | head -n 1); tarball: $(cmp "$tarball" "$tarball2" 2>&1 | head -n 1)); files that differ: $(diff -rq "$work/deb" "$work/deb2" 2>&1 | head -n 5 | tr '\n' ';')"
    fi
fi

# --- 3. cargo install --------------------------------------------------------------------------
# The other way to install: from source with cargo. The package's release build is zig's (another
# linker, which cargo counts as other settings: a second release build of everything), so this
# installs the debug build, reusing the test suite's: the release profile is built above.
if timeout 1800 cargo install --locked --quiet --debug --path crates/linerate-cli \
    --root "$work/cargo-root" --target-dir "${CARGO_TARGET_DIR:-target}" 2>"$work/cargo-install.log" &&
    "$work/cargo-root/bin/linerate" --version | grep -q '^linerate '; then
    pass "cargo install --locked --debug --path crates/linerate-cli"
else
    tail -n 20 "$work/cargo-install.log" >&2
    fail "cargo install --locked --debug --path crates/linerate-cli"
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
