#!/usr/bin/env bash
# Build (once per CPU feature set) and install llama-cpp-python with flags that work on this machine.
# The default build crashes here (SIGSEGV in the AMX matmul path), so GGML_NATIVE=OFF; the AVX-512
# family is then switched on flag by flag, only where /proc/cpuinfo lists it (an instruction the CPU
# lacks is a SIGILL on the first prompt: these AMD machines have avx512_vnni but not avx_vnni).
# pip's wheel cache ignores CMAKE_ARGS, so the built wheel is kept in
# $VERIFIEDSQL_HOME/wheels/llama-<hash of version and flags>/ (default ~/.cache/verifiedsql) and reused.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
VERSION=0.3.36
FLAGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { [[ " $cpu_flags " == *" $1 "* ]]; }
has avx512f && FLAGS="$FLAGS -DGGML_AVX512=ON"
has avx512_vnni && FLAGS="$FLAGS -DGGML_AVX512_VNNI=ON"
has avx512vbmi && FLAGS="$FLAGS -DGGML_AVX512_VBMI=ON"
has avx512_bf16 && FLAGS="$FLAGS -DGGML_AVX512_BF16=ON"
has avx_vnni && FLAGS="$FLAGS -DGGML_AVX_VNNI=ON"
KEY=$(printf '%s %s' "$VERSION" "$FLAGS" | sha256sum | cut -c1-16)
DIR=${VERIFIEDSQL_HOME:-$HOME/.cache/verifiedsql}/wheels/llama-$KEY
if [ -f "$DIR/.installed-$(realpath "$PY" | sha256sum | cut -c1-12)" ] \
   && "$PY" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$VERSION')" 2>/dev/null; then
  exit 0
fi
if ! ls "$DIR"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $VERSION (5-7 minutes, once) with: $FLAGS" >&2
  mkdir -p "$DIR"
  CMAKE_ARGS="$FLAGS" CMAKE_BUILD_PARALLEL_LEVEL=2 FORCE_CMAKE=1 \
    "$PY" -m pip wheel -q --no-cache-dir --no-deps -w "$DIR" "llama-cpp-python==$VERSION"
  echo "$FLAGS" > "$DIR/FLAGS"
fi
"$PY" -m pip install -q --force-reinstall --no-deps "$DIR"/llama_cpp_python-*.whl
# the [server] extra (FastAPI, uvicorn, ...) comes from the registry; the wheel itself from $DIR
"$PY" -m pip install -q "llama-cpp-python[server]==$VERSION" --find-links "$DIR"
touch "$DIR/.installed-$(realpath "$PY" | sha256sum | cut -c1-12)"
