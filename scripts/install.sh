#!/usr/bin/env bash
# Builds offer-signer in release mode and installs it, so that `offer-signer` is on the PATH:
#
#   scripts/install.sh [PREFIX]          # default PREFIX: ~/.local (the binary goes to PREFIX/bin)
#   sudo scripts/install.sh /usr/local   # for every user (the systemd unit expects /usr/local/bin)
#
# A first release build takes 10-20 minutes on 2 cores; later ones are incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-$HOME/.local}
swift build -c release --product offer-signer
mkdir -p "$prefix/bin"
install -m 0755 "$(swift build -c release --show-bin-path)/offer-signer" "$prefix/bin/offer-signer"
echo "installed $prefix/bin/offer-signer"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "add it to your PATH: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
