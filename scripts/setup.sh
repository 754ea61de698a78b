#!/usr/bin/env bash
# Installs what tokscope needs on a Debian machine, skipping what is already there, then fetches
# the default model. Safe to run again. Used by scripts/run.sh and scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
apt_updated=""
apt_install() {
  [ -n "$apt_updated" ] || { $SUDO apt-get update -qq; apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

if ! command -v cargo >/dev/null; then
  echo "setup: Rust is missing; install it with rustup (https://rustup.rs), then run this again" >&2
  exit 1
fi
command -v cc >/dev/null || apt_install build-essential
python3 -m pip --version >/dev/null 2>&1 || apt_install python3 python3-pip

installed_components=$(rustup component list --installed 2>/dev/null || true)
for c in rustfmt clippy; do
  grep -q "^$c" <<<"$installed_components" || rustup component add "$c"
done
rustup target list --installed | grep -q '^wasm32-unknown-unknown$' || rustup target add wasm32-unknown-unknown

# wasm-bindgen's CLI (the wasm tests' runner, and `cargo xtask build-web`) must match the wasm-bindgen crate in Cargo.lock exactly.
wb_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if ! wasm-bindgen-test-runner --version 2>/dev/null | grep -q " $wb_version\b"; then
  # Not --locked: that lock pins a webpki-roots release the registry no longer serves.
  cargo install -q wasm-bindgen-cli --version "=$wb_version"
fi
command -v node >/dev/null || apt_install nodejs
# lavapipe (Mesa's Vulkan on the CPU) runs the wgpu kernels' tests where there is no GPU.
[ -e /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ] || ls /usr/share/vulkan/icd.d/lvp_icd.*.json >/dev/null 2>&1 ||
  apt_install mesa-vulkan-drivers libvulkan1

# Headless Chromium and its WebDriver, for the browser tests (WebGPU on SwiftShader without a GPU).
command -v chromium >/dev/null || apt_install chromium
command -v chromedriver >/dev/null || apt_install chromium-driver

# With --test (scripts/test.sh): the fuzz targets' tools, libFuzzer through cargo-fuzz on the
# nightly pinned in fuzz/rust-toolchain.toml (sanitizers need it; the product builds on stable),
# and axe-core (npm, pinned) for the browser tests' accessibility checks.
if [ "${1:-}" = "--test" ]; then
  command -v npm >/dev/null || apt_install npm
  axe=target/npm/node_modules/axe-core
  grep -qs '"version": "4.11.1"' "$axe/package.json" ||
    npm install --silent --no-save --no-audit --no-fund --prefix target/npm axe-core@4.11.1
  nightly=$(sed -n 's/^channel = "\(.*\)"/\1/p' fuzz/rust-toolchain.toml)
  rustup toolchain list | grep -q "^$nightly" || rustup toolchain install "$nightly" --profile minimal
  cargo fuzz --version 2>/dev/null | grep -q " 0.13.2$" || cargo install -q cargo-fuzz --locked --version 0.13.2
  # The other two browser engines (tests/e2e: engines.rs, webgpu.rs): Firefox ESR driven by
  # geckodriver (crates.io, pinned; WebGPU on lavapipe by pref) and WebKitGTK's MiniBrowser
  # driven by WebKitWebDriver, on an Xvfb display (MiniBrowser has no headless mode).
  command -v firefox-esr >/dev/null || apt_install firefox-esr
  geckodriver --version 2>/dev/null | grep -q "^geckodriver 0.37.1" ||
    cargo install -q --locked geckodriver --version 0.37.1
  command -v WebKitWebDriver >/dev/null || apt_install webkit2gtk-driver
  command -v Xvfb >/dev/null || apt_install xvfb
fi

cargo xtask fetch-model --all
