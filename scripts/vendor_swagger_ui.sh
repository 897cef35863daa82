#!/usr/bin/env bash
# Refresh the Swagger UI files the server serves at /docs itself (no CDN: /docs works offline).
# Run by a maintainer; the files are committed under src/avatarstream/serve/static/swagger-ui/.
set -euo pipefail
VERSION=${1:-5.32.0}
DEST="$(dirname "$0")/../src/avatarstream/serve/static/swagger-ui"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
(cd "$WORK" && npm pack "swagger-ui-dist@$VERSION" --silent >/dev/null && tar xzf swagger-ui-dist-*.tgz)
mkdir -p "$DEST"
for file in swagger-ui-bundle.js swagger-ui.css favicon-32x32.png LICENSE; do
    cp "$WORK/package/$file" "$DEST/$file"
done
echo "$VERSION" > "$DEST/VERSION"
echo "vendored swagger-ui-dist $VERSION into $DEST"
