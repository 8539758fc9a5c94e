#!/usr/bin/env bash
# Makes sure what the tests and the local run need is installed: Java, the
# gcloud Firestore and Pub/Sub emulators, Chromium, its headless shell and ShellCheck
# (Debian packages; the browser tests drive Debian's Chromium, since Playwright's own browser
# download is not available everywhere), the pinned
# firebase-tools for the Auth emulator, and the web client's packages (npm
# ci from the committed lock files; offline once installed).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
sdk_has() {
  local rel=$1
  for root in "${CLOUDSDK_ROOT_DIR:-}" /usr/lib/google-cloud-sdk /usr/share/google-cloud-sdk /google-cloud-sdk; do
    [ -n "$root" ] && [ -e "$root/$rel" ] && return 0
  done
  return 1
}
sdk_has platform/cloud-firestore-emulator/cloud-firestore-emulator.jar || missing+=(google-cloud-cli-firestore-emulator)
sdk_has platform/pubsub-emulator/bin/cloud-pubsub-emulator || missing+=(google-cloud-cli-pubsub-emulator)
# CHROMIUM_PATH names another Chromium for the browser tests.
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || missing+=(chromium)
# make test lints the shell scripts (deploy.sh, this one) with ShellCheck.
command -v shellcheck >/dev/null || missing+=(shellcheck)
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]} with apt-get (Chromium alone downloads about 100 MB)" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${missing[@]}"; }; then
    echo "deps: could not install ${missing[*]}." >&2
    echo "      Install Java 17+, the Google Cloud SDK emulators, Chromium and ShellCheck yourself:" >&2
    echo "      https://cloud.google.com/sdk/docs/install (apt: google-cloud-cli-firestore-emulator google-cloud-cli-pubsub-emulator chromium shellcheck)" >&2
    echo "      or set CHROMIUM_PATH to a Chromium binary." >&2
    exit 1
  fi
fi

# The browser tests prefer Debian's chromium-headless-shell (web/e2e/chromium.ts): the
# headless-only build that Playwright runs its own headless tests on. The whole
# browser stage took 886 CPU-seconds on it, against 1,360 on the full browser's
# headless mode (docs/testing.md). Without it the tests use the full Chromium, so
# a machine that cannot install it only runs slower.
if [ -z "${CHROMIUM_PATH:-}" ] && [ ! -x /usr/bin/chromium-headless-shell ]; then
  echo "deps: installing chromium-headless-shell with apt-get (about 65 MB; the browser tests' lighter Chromium)" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium-headless-shell; }; then
    echo "deps: could not install chromium-headless-shell; the browser tests use /usr/bin/chromium (slower)" >&2
  fi
fi

installs=()
if [ -f tools/package.json ]; then
  command -v npm >/dev/null || { echo "deps: npm not found; the Auth emulator needs Node.js 20+ (apt-get install nodejs npm)" >&2; exit 1; }
  if [ ! -x tools/node_modules/.bin/firebase ] || [ tools/package-lock.json -nt tools/node_modules/.package-lock.json ]; then
    # Without optional packages: firebase-tools' hosting emulator wants re2,
    # a native module that npm would compile with node-gyp when no prebuilt
    # binary can be downloaded (minutes of silence on two cores). The Auth
    # emulator does not use it, and superstatic falls back without it.
    echo "deps: npm ci in tools/: firebase-tools for the Auth emulator, without native builds (once; offline after)" >&2
    (cd tools && npm ci --omit=optional --no-audit --no-fund --loglevel=error) &
    installs+=($!)
  fi
fi

# web/: the Firebase JS SDK, Vite, TypeScript, ESLint, Vitest and Playwright
# (its library only: the tests use the system's Chromium), from its lock file.
if [ -f web/package.json ]; then
  command -v npm >/dev/null || { echo "deps: npm not found; web/ needs Node.js 20.19+ (apt-get install nodejs npm)" >&2; exit 1; }
  if [ ! -d web/node_modules ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
    echo "deps: npm ci in web/: the Firebase JS SDK, Vite, Vitest and Playwright's library (once, and again when web/package-lock.json changes)" >&2
    (cd web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error) &
    installs+=($!)
  fi
fi

# The two npm installs run side by side (mostly waiting on the registry and
# the disk); both are waited for, and a failed one fails this script.
failed=0
for pid in ${installs[@]+"${installs[@]}"}; do  # (bash before 4.4: an empty array is unset under set -u)
  wait "$pid" || failed=$?
done
if [ "$failed" != 0 ]; then
  echo "deps: npm ci failed (exit $failed); see its output above" >&2
  exit "$failed"
fi
