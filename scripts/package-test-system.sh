#!/usr/bin/env bash
# The checks of scripts/package-test.sh that install the package: run by it INSIDE a throwaway
# system (this machine's root under an overlay, booted with systemd as PID 1 in a container),
# never on a real one. Usage: package-test-system.sh DEB. One PASS/FAIL line per check, then
# "package-test-system: N passed, N failed".
set -uo pipefail

deb="$1"
passed=0
failed=0
pass() {
    echo "PASS $1"
    passed=$((passed + 1))
}
fail() {
    echo "FAIL $1"
    failed=$((failed + 1))
}
summary() {
    echo "package-test-system: $passed passed, $failed failed"
}

# It installs, removes and purges a package, edits /etc/default/linerate and starts a service:
# only where package-test.sh put it (an overlay root, systemd as PID 1, the marker it wrote).
if [ "$(findmnt -n -o FSTYPE /)" != overlay ] || [ "$(cat /proc/1/comm)" != systemd ] ||
    [ ! -f /etc/linerate-package-test ]; then
    fail "package-test-system.sh runs only inside package-test.sh's throwaway system"
    summary
    exit 1
fi

work=$(mktemp -d /var/tmp/linerate-package-test.XXXXXX)

# A linerate package installed on the machine is installed in its copy too: purged here first,
# so what follows is a fresh install (the machine's own package stays as it is).
if dpkg-query -W -f='${Status}' linerate 2>/dev/null | grep -q installed; then
    was=$(dpkg-query -W -f='${Version}' linerate)
    if timeout 120 dpkg --purge linerate >"$work/purge-first.log" 2>&1; then
        echo "note: linerate $was is installed on this machine: purged in the throwaway copy first"
    else
        fail "purge the machine's linerate $was in the throwaway copy: $(tail -n 3 "$work/purge-first.log")"
        summary
        exit 1
    fi
fi

# The paths a package could leave behind, minus dpkg's and apt's own records.
snapshot() {
    find /usr /etc /var/lib /opt -xdev \( -path /var/lib/dpkg -o -path /var/lib/apt \) -prune -o -print 2>/dev/null | sort
}

# --- install -----------------------------------------------------------------------------------
snapshot >"$work/before"
if ! timeout 300 dpkg -i "$deb" >"$work/install.log" 2>&1; then
    fail "dpkg -i $deb: $(tail -n 5 "$work/install.log")"
    summary
    exit 1
fi
dpkg -L linerate | sort >"$work/files"
dpkg-query -W -f='${Conffiles}\n' linerate | awk 'NF { print $1 }' >"$work/conffiles"
missing=
for f in /usr/bin/linerate /usr/lib/systemd/system/linerate-serve.service /etc/default/linerate \
    /usr/share/bash-completion/completions/linerate /usr/share/zsh/vendor-completions/_linerate \
    /usr/share/fish/vendor_completions.d/linerate.fish /usr/share/man/man1/linerate.1.gz \
    /usr/share/man/man1/linerate-doctor.1.gz /usr/share/doc/linerate/copyright \
    /usr/share/doc/linerate/changelog.Debian.gz /usr/share/doc/linerate/third-party-licenses.txt.gz \
    /usr/share/lintian/overrides/linerate; do
    [ -e "$f" ] || missing+=" $f"
done
if [ -z "$missing" ] && /usr/bin/linerate --version | grep -q '^linerate '; then
    pass "dpkg -i: binary, unit, /etc/default/linerate (a conffile: $(tr '\n' ' ' <"$work/conffiles")), completions, man pages, copyright, changelog, third-party licences in place"
else
    fail "dpkg -i: missing${missing:- nothing, but /usr/bin/linerate --version fails}"
fi
recommends=$(dpkg-query -W -f='${Recommends}' linerate)
depends=$(dpkg-query -W -f='${Depends}' linerate)
if [[ "$recommends" == *libfabric1* && "$depends" != *libfabric* ]]; then
    pass "libfabric1 is recommended, not a dependency (Depends: $depends)"
else
    fail "libfabric1 must be a Recommends, not a Depends (Depends: $depends; Recommends: $recommends)"
fi

# --- licences and changelog --------------------------------------------------------------------
# The third-party file: licence texts, and the crates every build links (clap, serde) among them.
licences=$(zcat /usr/share/doc/linerate/third-party-licenses.txt.gz)
crates=$(grep 'used by: ' <<<"$licences" | sed 's/.*used by: //' | tr ',' '\n' | grep -c .)
if grep -q 'Permission is hereby granted' <<<"$licences" && [ "$crates" -ge 20 ] &&
    grep -qE '(^|[ :,])clap [0-9]' <<<"$licences" && grep -qE '(^|[ :,])serde [0-9]' <<<"$licences" &&
    grep -q '^License: MIT$' /usr/share/doc/linerate/copyright &&
    grep -q '^Files: \*$' /usr/share/doc/linerate/copyright; then
    pass "licences: the copyright file (DEP-5: MIT or Apache-2.0) and the licence texts of $crates linked crates in third-party-licenses.txt.gz"
else
    fail "licences: third-party-licenses.txt.gz names $crates crates, or lacks a licence text, clap or serde, or the copyright file its MIT text"
fi
zcat /usr/share/doc/linerate/changelog.Debian.gz >"$work/changelog"
top=$(head -n 1 "$work/changelog")
version=$(dpkg-query -W -f='${Version}' linerate)
parsed=$(dpkg-parsechangelog -l "$work/changelog" -S Version 2>&1)
entries=$(grep -c '^linerate (' "$work/changelog")
if [ "$top" = "linerate ($version) unstable; urgency=medium" ] && [ "$parsed" = "$version" ]; then
    pass "changelog.Debian.gz: $entries entries, the latest the package's version ($version); dpkg-parsechangelog reads it"
else
    fail "changelog.Debian.gz: first line '$top' for version $version; dpkg-parsechangelog: $parsed"
fi

# --- man pages ---------------------------------------------------------------------------------
# One page per subcommand the binary has, plus linerate.1; each renders without a warning in 80
# columns; apropos lists each with its whole NAME line (dpkg's man-db trigger indexed them).
pages=$(grep -c '^/usr/share/man/man1/linerate.*\.1\.gz$' "$work/files")
names=$(/usr/bin/linerate --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }' | grep -vx help)
subcommands=$(wc -w <<<"$names")
bad=
for name in $names; do
    grep -qx "/usr/share/man/man1/linerate-$name.1.gz" "$work/files" || bad+=" no page for linerate $name;"
done
for page in $(grep '^/usr/share/man/man1/linerate.*\.1\.gz$' "$work/files"); do
    warnings=$(MANWIDTH=80 timeout 20 man -l --warnings -E UTF-8 "$page" 2>&1 >"$work/page.txt")
    wide=$(wc -L <"$work/page.txt")
    if [ -n "$warnings" ] || [ "$wide" -gt 80 ] || ! grep -q '^NAME' "$work/page.txt" ||
        ! grep -q '^SYNOPSIS' "$work/page.txt"; then
        bad+=" $(basename "$page"): ${warnings:-$wide columns or no NAME/SYNOPSIS};"
    fi
done
doctor=$(MANWIDTH=80 timeout 20 man linerate-doctor 2>/dev/null)
for section in EXAMPLES 'EXIT STATUS' 'SEE ALSO'; do
    grep -qx "$section" <<<"$doctor" || bad+=" man linerate-doctor has no $section;"
done
# apropos pads the names into a column: compare with single spaces.
apropos=$(timeout 20 apropos linerate 2>&1 | tr -s ' ')
for page in $(grep '^/usr/share/man/man1/linerate.*\.1\.gz$' "$work/files"); do
    want=$(lexgrog "$page" | sed -n 's/^[^:]*: "\(.*\)"$/\1/p' | sed 's/ - / (1) - /')
    grep -qxF "$want" <<<"$apropos" || bad+=" apropos lacks '$want';"
done
if [ -z "$bad" ] && [ "$pages" -gt "$subcommands" ] && [ "$subcommands" -ge 7 ]; then
    pass "man: $pages pages render without warnings within 80 columns, one per subcommand ($subcommands) and linerate.1; \`man linerate-doctor\` has EXAMPLES, EXIT STATUS, SEE ALSO; \`apropos linerate\` lists all $pages with their whole NAME lines"
else
    fail "man: pages $pages for $subcommands subcommands;$bad"
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

# --- the unit ----------------------------------------------------------------------------------
unit=linerate-serve.service
# verify exits 0 on unknown keys and only warns: any output is a failure too.
verify=$(timeout 60 systemd-analyze verify "/usr/lib/systemd/system/$unit" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && [ -z "$verify" ]; then
    pass "systemd-analyze verify $unit: no error, no warning"
else
    fail "systemd-analyze verify $unit (exit $rc): $verify"
fi
# The sandbox as the running systemd scores it (0 = locked down, 10 = exposed): at most 2 ("OK").
exposure=$(timeout 60 systemd-analyze security "$unit" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
if [ -n "$exposure" ] && timeout 60 systemd-analyze security --threshold=20 "$unit" >/dev/null 2>&1; then
    pass "systemd-analyze security $unit: exposure $exposure (threshold 2.0)"
else
    fail "systemd-analyze security $unit: exposure ${exposure:-unknown}, above 2.0"
fi
# Installed disabled, not started: a test server is opened on purpose, never by installing.
state=$(systemctl is-enabled "$unit" 2>&1)
active=$(systemctl is-active "$unit" 2>&1)
if [ "$state" = disabled ] && [ "$active" = inactive ]; then
    pass "$unit is installed disabled and not running"
else
    fail "$unit after install: $state, $active"
fi

# --- the service, under its sandbox, answering clients -----------------------------------------
# As an administrator would: --write-dir as /etc/default/linerate suggests, then start. The
# container has a network namespace of its own: the default port, clients on 127.0.0.1.
sed -i 's|^LINERATE_SERVE_OPTS=.*|LINERATE_SERVE_OPTS="--write-dir /var/lib/linerate"|' /etc/default/linerate
if ! timeout 60 systemctl start "$unit"; then
    fail "systemctl start $unit: $(journalctl -u "$unit" -o cat --no-pager | tail -n 5)"
fi
for _ in $(seq 100); do
    journalctl -u "$unit" -o cat --no-pager 2>/dev/null | grep -q '"listening"' && break
    sleep 0.1
done
pid=$(systemctl show -p MainPID --value "$unit")
# The settings are in force on the running server: a dynamic user, no capabilities, no new
# privileges, a seccomp filter, a user namespace of its own (PrivateUsers=).
sandbox=
if [ -n "$pid" ] && [ "$pid" != 0 ]; then
    uid=$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")
    [ "$uid" -ge 61184 ] && [ "$uid" -le 65519 ] || sandbox+=" uid $uid is not a dynamic user's;"
    grep -q '^CapBnd:[[:space:]]*0000000000000000$' "/proc/$pid/status" || sandbox+=" capabilities left;"
    grep -q '^NoNewPrivs:[[:space:]]*1$' "/proc/$pid/status" || sandbox+=" new privileges allowed;"
    grep -q '^Seccomp:[[:space:]]*2$' "/proc/$pid/status" || sandbox+=" no seccomp filter;"
    [ "$(readlink "/proc/$pid/ns/user")" != "$(readlink /proc/1/ns/user)" ] || sandbox+=" no user namespace;"
    [ "$(readlink "/proc/$pid/ns/mnt")" != "$(readlink /proc/1/ns/mnt)" ] || sandbox+=" no mount namespace;"
else
    sandbox=" not running"
fi
if [ -z "$sandbox" ]; then
    pass "$unit runs as dynamic user $uid with no capabilities, no new privileges, a seccomp filter, its own user and mount namespaces"
else
    fail "$unit's sandbox:$sandbox"
fi
head -c 1000000 /dev/urandom >"$work/payload"
client() {
    local what="$1"
    shift
    if timeout 60 /usr/bin/linerate "$@" >"$work/client.out" 2>&1; then
        clients+=" $what"
    else
        clients_failed+=" $what (linerate $*: $(tail -n 2 "$work/client.out" | tr '\n' ' '))"
    fi
}
clients=
clients_failed=
client "TCP" bench 127.0.0.1 -t 1 --json
client "UDP" bench 127.0.0.1 -t 1 -u -b 100M --json
client "latency" bench 127.0.0.1 -t 1 --latency --json
client "file copy" bench 127.0.0.1 --file "$work/payload" --file-name copy --json
if ldconfig -p | grep -q 'libfabric\.so\.1 '; then
    client "RDMA (libfabric tcp)" bench 127.0.0.1 -t 1 --rdma --provider tcp --json
fi
# doctor: the server's inventory read under ProtectSystem, ProtectProc and PrivateUsers, and its
# plan of tests; status 1 is a finding about this container's loopback, not a failure.
timeout 120 /usr/bin/linerate doctor 127.0.0.1 --quick --no-disk --no-rdma --json >"$work/doctor.json" 2>"$work/doctor.err"
doctor_rc=$?
if [ "$doctor_rc" -le 1 ] && grep -q '"tests"' "$work/doctor.json"; then
    clients+=" doctor"
else
    clients_failed+=" doctor (exit $doctor_rc: $(tail -n 2 "$work/doctor.err" | tr '\n' ' '))"
fi
copy=/var/lib/private/linerate/copy
errors=$(journalctl -u "$unit" -o cat --no-pager | grep -c '"event":"error"')
restarts=$(systemctl show -p NRestarts --value "$unit")
if [ -z "$clients_failed" ] && cmp -s "$work/payload" "$copy" && [ "$(stat -c %u "$copy")" = "$uid" ] &&
    [ "$errors" = 0 ] && [ "$restarts" = 0 ] && [ "$(systemctl is-active "$unit")" = active ]; then
    pass "$unit answered under its sandbox:$clients; the 1 MB copy is byte-identical in /var/lib/linerate; no error logged, no restart"
else
    fail "$unit under its sandbox: failed:${clients_failed:- none}; copy $(cmp "$work/payload" "$copy" 2>&1 || true); $errors errors logged, $restarts restarts: $(journalctl -u "$unit" -o cat --no-pager | grep -v '"event":"test"' | tail -n 3)"
fi
timeout 60 systemctl stop "$unit"

# --- removal -----------------------------------------------------------------------------------
timeout 120 dpkg -r linerate >"$work/remove.log" 2>&1
left=$(grep -vxFf "$work/conffiles" "$work/files" | while read -r f; do [ -f "$f" ] || [ -L "$f" ] && echo "$f"; done)
if [ -z "$left" ] && [ ! -e /usr/bin/linerate ] && [ -f /etc/default/linerate ] && [ -f "$copy" ]; then
    pass "dpkg -r: every installed file is gone but the conffile /etc/default/linerate and the service's /var/lib/linerate (kept until --purge, as Debian does)"
else
    fail "dpkg -r left:${left:- /usr/bin/linerate}$([ -f /etc/default/linerate ] || echo ' (and removed the conffile)')$([ -f "$copy" ] || echo ' (and removed the state directory)')"
fi
timeout 120 dpkg --purge linerate >"$work/purge.log" 2>&1
snapshot >"$work/after"
# New paths since before the install. The machine under the overlay may change meanwhile (others
# install packages): a new path fails the check when it is the package's or its service's.
# (/var/lib/private, which systemd makes for any DynamicUser= service, is systemd's: it may stay.)
new=$(comm -13 "$work/before" "$work/after" | grep -v '^$')
ours=$( (grep -i linerate <<<"$new"; grep -xFf "$work/files" <<<"$new") | sort -u | grep -v '^$')
others=$(grep -ci -v -e linerate -e '^$' <<<"$new")
if [ -z "$ours" ] && ! dpkg-query -W linerate >/dev/null 2>&1 && [ ! -e /var/lib/private/linerate ]; then
    pass "dpkg --purge: nothing of the package is left in /usr /etc /var/lib /opt, the service's /var/lib/private/linerate and its copies included ($(wc -l <"$work/files") paths installed; $others new paths not ours)"
else
    fail "dpkg --purge left: ${ours//$'\n'/ }"
fi

rm -rf "$work"
summary
[ "$failed" -eq 0 ]
