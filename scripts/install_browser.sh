#!/usr/bin/env bash
# Install Debian's chromium for the browser tests (Playwright drives it through
# executable_path; it cannot download its own browsers here). Nothing to do when present.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
SUDO=""
[ "$(id -u)" = "0" ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
command -v chromium
