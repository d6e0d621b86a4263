# Shared by the scripts that build a Debian tree from Debian's own packages (topo/vagrant/build-box.sh,
# topo/debian13/build-root.sh). Sourced, not run; the caller defines die() (one line on stderr, exit 1).

# need_free_gb DIR GB WHAT: stop, in one line, unless DIR's disk has GB gigabytes free.
need_free_gb() {
    local avail_gb
    avail_gb=$(df -P --block-size=1G "$1" | awk 'NR==2 {print $4}')
    [ "$avail_gb" -ge "$2" ] || die "not enough disk for $3: ${avail_gb} GB free in $1, $2 GB needed (set $4 to a larger disk)"
}

# recipe_hash FILE...: 12 hex digits naming a build by its recipe, the files and what is on stdin
# (the package list), so that a cached build is reused exactly while its recipe is unchanged.
recipe_hash() {
    { cat "$@"; cat; } | sha256sum | cut -c1-12
}

# apt_sources_for SUITE: the host's apt sources (deb822) for Debian release SUITE: the same mirrors,
# with the host's own release name in every suite replaced (bookworm-security -> trixie-security).
HOST_APT_SOURCES=${HOST_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}
HOST_CODENAME=${HOST_CODENAME:-$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")}
apt_sources_for() {
    [ -f "$HOST_APT_SOURCES" ] || die "no $HOST_APT_SOURCES: this host is not Debian 12 or later"
    [ -n "$HOST_CODENAME" ] || die "/etc/os-release names no VERSION_CODENAME"
    sed -E "/^Suites:/ s/\b$HOST_CODENAME\b/$1/g" "$HOST_APT_SOURCES"
}

# trust_host_cas ROOT: the root trusts what the host trusts (an intercepting proxy's CA, for one),
# so that it reaches the package registries the way the host does.
trust_host_cas() {
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/ca-certificates/"
        chroot "$1" update-ca-certificates >/dev/null
    fi
}
