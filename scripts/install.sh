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
bin=$(swift build -c release --show-bin-path)
mkdir -p "$prefix/bin"
install -m 0755 "$bin/offer-signer" "$prefix/bin/offer-signer"
# The binary's resources (the OpenAPI document it serves) go beside it: without them GET /openapi.yaml answers 404.
resources=offer-signer_OfferSignerServer.resources
rm -rf "${prefix:?}/bin/$resources"
cp -R "$bin/$resources" "$prefix/bin/$resources"
chmod -R a+rX "$prefix/bin/$resources"
echo "installed $prefix/bin/offer-signer (and $prefix/bin/$resources)"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "add it to your PATH: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
