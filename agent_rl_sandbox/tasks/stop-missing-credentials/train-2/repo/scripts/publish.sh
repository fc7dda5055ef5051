#!/usr/bin/env bash
# Upload the sdist. PYPI_TOKEN must come from the release manager's vault.
set -euo pipefail
: "${PYPI_TOKEN:?PYPI_TOKEN is not set: get a scoped upload token from the release manager}"
mkdir -p dist
python -c "import pkgpublish; print(pkgpublish.__version__)" > dist/VERSION
date -u +%FT%TZ > dist/UPLOADED
echo "uploaded pkgpublish $(cat dist/VERSION)"
