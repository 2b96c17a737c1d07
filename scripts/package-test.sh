#!/usr/bin/env bash
# Build the .deb, install it on this machine, check what it installed, remove it: one PASS/FAIL
# line per check and a closing "package-test: N passed, N failed, N skipped".
#
# It installs a package system-wide, so it needs root; it refuses to run where a linerate
# package is already installed (it would replace and then remove it), and LINERATE_PACKAGE_TEST=0
# leaves it out. Without root, or left out, it skips, says why, appends "package-test: REASON"
# to $LINERATE_SKIP_LOG when set, and fails instead when LINERATE_REQUIRE_PRIVILEGED is set (and
# not 0), as linerate-testkit does. scripts/setup-tests.sh installs what it uses (cargo-deb,
# man-db, bash-completion, systemd-analyze). Every step is bounded in time; the package is purged at the
# end whatever happened.
set -uo pipefail
cd "$(dirname "$0")/.."

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

skip_all() {
    echo "SKIP package-test: $1"
    if [ -n "${LINERATE_SKIP_LOG:-}" ]; then
        echo "package-test: $1" >>"$LINERATE_SKIP_LOG"
    fi
    if [ -n "${LINERATE_REQUIRE_PRIVILEGED:-}" ] && [ "${LINERATE_REQUIRE_PRIVILEGED}" != 0 ]; then
        echo "FAIL package-test: skipped, but LINERATE_REQUIRE_PRIVILEGED=1 requires it to run" >&2
        failed=1
        summary
        exit 1
    fi
    skipped=1
    summary
    exit 0
}

if [ "$(id -u)" -ne 0 ]; then
    skip_all "needs root (it installs the .deb with dpkg -i)"
fi
if [ "${LINERATE_PACKAGE_TEST:-}" = 0 ]; then
    skip_all "left out with LINERATE_PACKAGE_TEST=0"
fi

for tool in cargo-deb:"cargo deb --version" man:"man --version" systemd-analyze:"systemd-analyze --version" setpriv:"setpriv --version"; do
    if ! ${tool#*:} >/dev/null 2>&1; then
        fail "${tool%%:*} is missing: run scripts/setup-tests.sh"
        summary
        exit 1
    fi
done
if dpkg-query -W -f='${Status}' linerate 2>/dev/null | grep -q installed; then
    fail "a linerate package is already installed on this machine; this test would replace and remove it (dpkg --purge linerate first)"
    summary
    exit 1
fi

work=$(mktemp -d /tmp/linerate-package-test.XXXXXX)
server_pid=
installed=0
cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
    fi
    if [ "$installed" = 1 ]; then
        timeout 120 dpkg --purge linerate >/dev/null 2>&1
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# The paths a package could leave behind, minus dpkg's and apt's own records.
snapshot() {
    find /usr /etc /var/lib /opt -xdev \( -path /var/lib/dpkg -o -path /var/lib/apt \) -prune -o -print 2>/dev/null | sort
}

# --- build -------------------------------------------------------------------------------------
if ! deb=$(timeout 900 scripts/package.sh 2>"$work/build.log" | tail -n 1) || [ ! -f "$deb" ]; then
    tail -n 30 "$work/build.log" >&2
    fail "build the .deb (scripts/package.sh: cargo deb -p linerate)"
    summary
    exit 1
fi
pass "build the .deb: $deb ($(du -h "$deb" | cut -f1))"

# The other way to install: from source with cargo. The same target dir reuses the .deb's build.
if timeout 900 cargo install --locked --quiet --path crates/linerate-cli --root "$work/cargo-root" \
    --target-dir "${CARGO_TARGET_DIR:-target}" 2>"$work/cargo-install.log" &&
    "$work/cargo-root/bin/linerate" --version | grep -q '^linerate '; then
    pass "cargo install --locked --path crates/linerate-cli"
else
    tail -n 20 "$work/cargo-install.log" >&2
    fail "cargo install --locked --path crates/linerate-cli"
fi

# --- install -----------------------------------------------------------------------------------
snapshot >"$work/before"
if ! timeout 120 dpkg -i "$deb" >"$work/install.log" 2>&1; then
    cat "$work/install.log" >&2
    installed=1
    fail "dpkg -i $deb"
    summary
    exit 1
fi
installed=1
dpkg -L linerate | sort >"$work/files"
dpkg-query -W -f='${Conffiles}\n' linerate | awk 'NF { print $1 }' >"$work/conffiles"
missing=
for f in /usr/bin/linerate /lib/systemd/system/linerate-serve.service /etc/default/linerate \
    /usr/share/bash-completion/completions/linerate /usr/share/zsh/vendor-completions/_linerate \
    /usr/share/fish/vendor_completions.d/linerate.fish /usr/share/man/man1/linerate.1.gz \
    /usr/share/man/man1/linerate-doctor.1.gz; do
    [ -e "$f" ] || missing+=" $f"
done
if [ -z "$missing" ] && /usr/bin/linerate --version | grep -q '^linerate '; then
    pass "dpkg -i: binary, unit, /etc/default/linerate (a conffile: $(tr '\n' ' ' <"$work/conffiles")), completions, man pages in place"
else
    fail "dpkg -i: missing${missing:- nothing, but /usr/bin/linerate --version fails}$(grep -qs 'path-exclude=/usr/share/man' /etc/dpkg/dpkg.cfg.d/* && echo ' (dpkg excludes /usr/share/man here: /etc/dpkg/dpkg.cfg.d)')"
fi
recommends=$(dpkg-query -W -f='${Recommends}' linerate)
depends=$(dpkg-query -W -f='${Depends}' linerate)
if [[ "$recommends" == *libfabric1* && "$depends" != *libfabric* ]]; then
    pass "libfabric1 is recommended, not a dependency (Depends: $depends)"
else
    fail "libfabric1 must be a Recommends, not a Depends (Depends: $depends; Recommends: $recommends)"
fi

# --- man pages ---------------------------------------------------------------------------------
# One page per subcommand the binary has, plus linerate.1.
pages=$(grep -c '^/usr/share/man/man1/linerate.*\.1\.gz$' "$work/files")
names=$(/usr/bin/linerate --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }' | grep -vx help)
subcommands=$(wc -w <<<"$names")
bad=
for name in $names; do
    grep -qx "/usr/share/man/man1/linerate-$name.1.gz" "$work/files" || bad+=" no page for linerate $name;"
done
for page in $(grep '^/usr/share/man/man1/linerate.*\.1\.gz$' "$work/files"); do
    warnings=$(MANWIDTH=80 timeout 20 man -l --warnings -E UTF-8 "$page" 2>&1 >"$work/page.txt")
    if [ -n "$warnings" ] || ! grep -q '^NAME' "$work/page.txt" || ! grep -q '^SYNOPSIS' "$work/page.txt"; then
        bad+=" $(basename "$page"): ${warnings:-no NAME/SYNOPSIS}"
    fi
done
if [ -z "$bad" ] && [ "$pages" -gt "$subcommands" ] && [ "$subcommands" -ge 7 ] &&
    [ "$(man -w linerate-doctor 2>/dev/null)" = /usr/share/man/man1/linerate-doctor.1.gz ] &&
    MANWIDTH=80 timeout 20 man linerate-doctor 2>/dev/null | grep -q '^LINERATE-DOCTOR(1)'; then
    pass "man: $pages pages render without warnings (man -l --warnings), one per subcommand ($subcommands) and linerate.1; \`man linerate-doctor\` finds its page"
else
    fail "man: pages $pages for $subcommands subcommands;${bad:- man -w linerate-doctor: $(man -w linerate-doctor 2>&1)}"
fi

# --- bash completion ---------------------------------------------------------------------------
# As an interactive bash does: bash-completion's loader finds the file by the command's name in
# /usr/share/bash-completion/completions; then the function completes `linerate ben<TAB>`.
completion=$(timeout 20 bash --norc --noprofile -c '
    source /usr/share/bash-completion/bash_completion || exit 1
    __load_completion linerate || { echo "not loaded"; exit 1; }
    spec=$(complete -p linerate) || exit 1
    fn=$(sed -n "s/.*-F \([^ ]*\) .*/\1/p" <<<"$spec")
    COMP_WORDS=(linerate ben); COMP_CWORD=1; COMP_LINE="linerate ben"; COMP_POINT=${#COMP_LINE}
    "$fn" linerate ben linerate
    echo "${COMPREPLY[*]}"
    COMP_WORDS=(linerate serve --max-t); COMP_CWORD=2; COMP_LINE="linerate serve --max-t"; COMP_POINT=${#COMP_LINE}
    "$fn" linerate --max-t serve
    echo "${COMPREPLY[*]}"' 2>&1)
if [ "$(sed -n 1p <<<"$completion")" = bench ] && [ "$(sed -n 2p <<<"$completion")" = --max-tests ]; then
    pass "bash: the completion loads by name; \`linerate ben<TAB>\` gives bench, \`linerate serve --max-t<TAB>\` gives --max-tests"
else
    fail "bash completion: got '${completion//$'\n'/ | }', want 'bench | --max-tests'"
fi

# --- systemd unit ------------------------------------------------------------------------------
unit=/lib/systemd/system/linerate-serve.service
# verify exits 0 on unknown keys and only warns: any output is a failure too.
verify=$(timeout 60 systemd-analyze verify "$unit" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && [ -z "$verify" ]; then
    pass "systemd-analyze verify $unit: no error, no warning"
else
    fail "systemd-analyze verify $unit (exit $rc): $verify"
fi
# The sandbox as systemd scores it (0 = locked down, 10 = exposed): at most 2 ("OK").
exposure=$(timeout 60 systemd-analyze security --offline=yes "$unit" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
if [ -n "$exposure" ] && timeout 60 systemd-analyze security --offline=yes --threshold=20 "$unit" >/dev/null 2>&1; then
    pass "systemd-analyze security --offline: exposure $exposure (threshold 2.0)"
else
    fail "systemd-analyze security --offline: exposure ${exposure:-unknown}, above 2.0"
fi
# Installed disabled, not started: a test server is opened on purpose, never by installing.
enabled=$(find /etc/systemd/system -name linerate-serve.service 2>/dev/null)
if [ -z "$enabled" ]; then
    pass "the unit is installed disabled (no link to it in /etc/systemd/system)"
else
    fail "the unit is enabled after install: $enabled"
fi

# --- the service's ExecStart, by hand ----------------------------------------------------------
# No systemd as PID 1 in a container, so run the unit's ExecStart line the way systemd would:
# options from /etc/default/linerate (edited as an admin would), as an unprivileged user without
# new privileges, its --write-dir a directory of that user's (the StateDirectory), on 127.0.0.1.
port=$((20000 + RANDOM % 20000))
state="$work/state"
mkdir -p "$state"
chown nobody:nogroup "$state"
chmod 0750 "$state"
chmod 0755 "$work"
cp /etc/default/linerate "$work/default.orig"
sed -i "s|^LINERATE_SERVE_OPTS=.*|LINERATE_SERVE_OPTS=\"--bind 127.0.0.1 --port $port --once --write-dir $state\"|" /etc/default/linerate
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
argv=()
# shellcheck disable=SC2086 # systemd splits an unbraced $VAR into words: so does this.
for word in $exec_start; do
    if [ "$word" = '$LINERATE_SERVE_OPTS' ]; then
        opts=$(set -a && . /etc/default/linerate && echo "$LINERATE_SERVE_OPTS")
        read -ra more <<<"$opts"
        argv+=("${more[@]}")
    else
        argv+=("$word")
    fi
done
timeout 60 setpriv --reuid=nobody --regid=nogroup --clear-groups --no-new-privs \
    --inh-caps=-all --bounding-set=-all "${argv[@]}" >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 50); do
    grep -q '"listening"' "$work/serve.log" 2>/dev/null && break
    sleep 0.1
done
head -c 1000000 /dev/urandom >"$work/payload"
client=$(timeout 30 /usr/bin/linerate bench 127.0.0.1 -p "$port" --file "$work/payload" --file-name copy --json 2>&1)
client_rc=$?
# `serve --once` exits by itself when its test ends; bounded, in case it does not.
for _ in $(seq 1 100); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
kill "$server_pid" 2>/dev/null
wait "$server_pid"
server_rc=$?
server_pid=
if [ "$client_rc" -eq 0 ] && [ "$server_rc" -eq 0 ] && cmp -s "$work/payload" "$state/copy" &&
    [ "$(stat -c %U "$state/copy")" = nobody ]; then
    pass "ExecStart (${argv[*]}) as nobody, no new privileges: served a 1 MB copy into its --write-dir, then exited (--once)"
else
    fail "ExecStart ${argv[*]}: server exit $server_rc, client exit $client_rc: $(tail -n 3 "$work/serve.log") ${client:0:300}"
fi
cp "$work/default.orig" /etc/default/linerate

# --- removal -----------------------------------------------------------------------------------
timeout 120 dpkg -r linerate >"$work/remove.log" 2>&1
left=$(grep -vxFf "$work/conffiles" "$work/files" | while read -r f; do [ -f "$f" ] || [ -L "$f" ] && echo "$f"; done)
if [ -z "$left" ] && [ ! -e /usr/bin/linerate ] && [ -f /etc/default/linerate ]; then
    pass "dpkg -r: every installed file is gone but the conffile /etc/default/linerate (kept until --purge, as Debian does)"
else
    fail "dpkg -r left:${left:- /usr/bin/linerate}$([ -f /etc/default/linerate ] || echo ' (and removed the conffile)')"
fi
timeout 120 dpkg --purge linerate >"$work/purge.log" 2>&1
installed=0
snapshot >"$work/after"
# New paths since before the install. Others may install packages on this machine meanwhile: a
# new path fails the check when it is one of ours (in the package's list, or named linerate).
new=$(comm -13 "$work/before" "$work/after" | grep -v '^$')
ours=$( (grep -i linerate <<<"$new"; grep -xFf "$work/files" <<<"$new") | sort -u | grep -v '^$')
others=$(grep -ci -v -e linerate -e '^$' <<<"$new")
if [ -z "$ours" ] && ! dpkg-query -W linerate >/dev/null 2>&1; then
    pass "dpkg --purge: nothing of the package is left in /usr /etc /var/lib /opt ($(wc -l <"$work/files") paths installed; $others new paths not ours)"
else
    fail "dpkg --purge left: ${ours//$'\n'/ }"
fi

summary
[ "$failed" -eq 0 ]
