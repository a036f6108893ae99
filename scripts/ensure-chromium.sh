#!/bin/sh
# Makes sure Debian's Chromium is on this machine for the browser tests (never Playwright's download).
# Installs it when missing and running as root; otherwise says exactly what to run and fails.
set -eu
if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || [ -n "${CAREERWISE_TEST_CHROMIUM:-}" ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "The browser tests need Debian's Chromium, which is missing. Run:" >&2
  echo "    sudo apt-get install -y chromium" >&2
  echo "(or set CAREERWISE_TEST_CHROMIUM to a Chromium binary), then make test again." >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "The browser tests need Chromium and this machine has no apt-get: install Chromium and set" >&2
  echo "CAREERWISE_TEST_CHROMIUM to its binary, then make test again." >&2
  exit 1
fi
echo "Installing Debian's chromium for the browser tests (once)..."
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
command -v chromium >/dev/null 2>&1 || { echo "apt-get ran but chromium is still missing" >&2; exit 1; }
echo "chromium installed: $(chromium --version 2>/dev/null || echo /usr/bin/chromium)"
