#!/usr/bin/env bash
# The system services the test suite runs against: redis-server, PostgreSQL and PgBouncer
# (the Redis and Postgres stores' tests start their own servers on free ports) and chromium
# (the answer desk's browser tests).
#
#   scripts/services.sh install   install whichever of them is missing (apt, as root)
#   scripts/services.sh check     exit 1, naming what is missing, unless all are installed
set -euo pipefail

# The command each service provides, and the Debian package that provides it.
# Debian keeps the PostgreSQL server binaries out of PATH: initdb is looked for there too.
readonly COMMANDS=(redis-server chromium initdb pgbouncer)
readonly PACKAGES=(redis-server chromium postgresql pgbouncer)

has_command() {
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$1" = initdb ]; then
        if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
            return 0
        fi
        compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && return 0
    fi
    # Debian installs pgbouncer in /usr/sbin, outside a normal user's PATH.
    [ "$1" = pgbouncer ] && [ -x /usr/sbin/pgbouncer ] && return 0
    return 1
}

missing_packages() {
    local i
    for i in "${!COMMANDS[@]}"; do
        if ! has_command "${COMMANDS[$i]}"; then
            echo "${PACKAGES[$i]}"
        fi
    done
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "services.sh: installing needs root (or sudo): $*" >&2
        exit 1
    fi
}

install() {
    local missing
    mapfile -t missing < <(missing_packages)
    if [ "${#missing[@]}" -eq 0 ]; then
        return 0
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "services.sh: no apt-get here; install these yourself: ${missing[*]}" >&2
        exit 1
    fi
    echo "services.sh: installing ${missing[*]}"
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        "${missing[@]}"
    # The tests start their own servers on free loopback ports: a system-wide redis that the
    # package may have started is not needed, so it does not stay running.
    if printf '%s\n' "${missing[@]}" | grep -qx redis-server; then
        as_root service redis-server stop >/dev/null 2>&1 || true
    fi
    if printf '%s\n' "${missing[@]}" | grep -qx postgresql; then
        as_root service postgresql stop >/dev/null 2>&1 || true
    fi
    if printf '%s\n' "${missing[@]}" | grep -qx pgbouncer; then
        as_root service pgbouncer stop >/dev/null 2>&1 || true
    fi
}

check() {
    local missing
    mapfile -t missing < <(missing_packages)
    if [ "${#missing[@]}" -ne 0 ]; then
        echo "services.sh: missing ${missing[*]}: run \`make test\` or \`scripts/services.sh install\`" >&2
        exit 1
    fi
}

case "${1:-}" in
    install) install ;;
    check) check ;;
    *)
        echo "usage: $0 {install|check}" >&2
        exit 2
        ;;
esac
