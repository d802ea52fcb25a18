# Sourced by the ensure-* scripts: `apt_install PACKAGE LOG` installs a Debian package with apt when this
# runs as root and apt-get exists (an update first only if the install fails), logging to LOG. Returns
# apt's status; the caller checks for what it needs afterwards.
apt_install() {
  local package="$1" log="$2"
  if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null; then return 1; fi
  echo "Installing $package (apt-get install $package) ..." >&2
  export DEBIAN_FRONTEND=noninteractive
  if apt-get install -y --no-install-recommends "$package" >"$log" 2>&1; then return 0; fi
  apt-get update >>"$log" 2>&1 || true
  apt-get install -y --no-install-recommends "$package" >>"$log" 2>&1
}
