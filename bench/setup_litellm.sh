#!/usr/bin/env sh
# Installs LiteLLM's proxy, the comparator of bench/tool_loop.py, into its own venv:
# bench/.venv-litellm (git-ignored). It is never a dependency of Toolwire.
#
#     sh bench/setup_litellm.sh            # the pinned version below
#     LITELLM_VERSION=1.108.14 sh bench/setup_litellm.sh
#
# The version is pinned: litellm 1.82.7, 1.82.8 and 1.107.0 were compromised releases, and
# from 1.110 the proxy extra needs a split package (litellm-proxy) some indexes do not serve.
set -eu

VERSION="${LITELLM_VERSION:-1.108.7}"
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="$HERE/.venv-litellm"
PYTHON="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "litellm[proxy]==$VERSION"
"$VENV/bin/python" -c "import importlib.metadata as m; print('litellm', m.version('litellm'))"
echo "LiteLLM proxy: $VENV/bin/litellm"
