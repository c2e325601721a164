#!/usr/bin/env bash
# Run bigvibebench-lite with every protocol against a local model served over the OpenAI API
# (scripts/serve_local_model.sh), then print the wall time. Resumable: every reply goes to a
# dedicated generation cache, so re-running the same command after an interruption only asks
# the server for what is missing (and a second full run is served entirely from the cache).
#
#   scripts/serve_local_model.sh qwen 8765 &          # in another terminal: the server
#   scripts/run_local_model_benchmark.sh               # the benchmark (defaults below)
#
# Settings (environment variables, defaults in brackets):
#   VIBE_MODEL      model alias served          [qwen2.5-coder-0.5b-instruct]
#   VIBE_BASE_URL   server URL                  [http://127.0.0.1:8765/v1]
#   VIBE_LIMIT      first N tasks of the suite  [30]
#   VIBE_MAX_TOKENS token limit per reply       [1024]
#   VIBE_CACHE      generation cache            [.vibecheck/qwen-cache.sqlite]
#   VIBE_OUT        report path prefix          [docs/results/qwen2.5-coder-0.5b]
#                   (writes PREFIX.json, PREFIX.junit.xml and appends to PREFIX.runs.jsonl)
#   VIBE_WORKERS    pytest-xdist workers        [1]  (llama.cpp serves one request at a time)
#   VIBE_CACHE_MODE use | only | refresh        [use] (only: re-score offline, no server)
#   VIBECHECK_TIMEOUT seconds per request       [3600]
# Extra arguments are passed to pytest (e.g. --vibe-tasks 'BigCodeBench/1*').
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL="${VIBE_MODEL:-qwen2.5-coder-0.5b-instruct}"
BASE_URL="${VIBE_BASE_URL:-http://127.0.0.1:8765/v1}"
LIMIT="${VIBE_LIMIT:-30}"
MAX_TOKENS="${VIBE_MAX_TOKENS:-1024}"
CACHE="${VIBE_CACHE:-.vibecheck/qwen-cache.sqlite}"
OUT="${VIBE_OUT:-docs/results/qwen2.5-coder-0.5b}"
WORKERS="${VIBE_WORKERS:-1}"
CACHE_MODE="${VIBE_CACHE_MODE:-use}"
PYTHON="${PYTHON:-.venv/bin/python}"
# a CPU-only server can take many minutes per reply; a timed-out request would be retried while
# the server is still busy with it, so allow one hour per request
export VIBECHECK_TIMEOUT="${VIBECHECK_TIMEOUT:-3600}"
[ -x "$PYTHON" ] || PYTHON=python3

mkdir -p "$(dirname "$OUT")" "$(dirname "$CACHE")"
if [ "$CACHE_MODE" != "only" ]; then
  curl -fsS "$BASE_URL/models" > /dev/null || {
    echo "no OpenAI-compatible server at $BASE_URL: start it with scripts/serve_local_model.sh" >&2
    exit 2
  }
fi

# shellcheck disable=SC2054  # the commas are pytest option values
cmd=("$PYTHON" -m pytest -p no:cacheprovider -q
  "--vibe-model=openai:$MODEL" "--vibe-base-url=$BASE_URL"
  --vibe-suite=bigvibebench-lite "--vibe-limit=$LIMIT"
  --vibe-protocol=baseline,single,multi --vibe-k=1,3,5
  --vibe-temperature=0 "--vibe-max-tokens=$MAX_TOKENS" --vibe-concurrency=1
  "--vibe-cache=$CACHE" "--vibe-cache-mode=$CACHE_MODE"
  "--vibe-report=$OUT.json" "--vibe-junitxml=$OUT.junit.xml")
if [ "$WORKERS" != "0" ]; then cmd+=(-n "$WORKERS"); fi
cmd+=("$@")

echo "+ ${cmd[*]}"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t0=$(date +%s.%N)
set +e
"${cmd[@]}"
status=$?
set -e
t1=$(date +%s.%N)
finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
# VIBE_RUN_KIND: record | score, how the run log counts this invocation (the wall time of the
# recording is that of the "record" invocations; re-scoring recorded replies is "score") [record]
printf '{"started": "%s", "finished": "%s", "wall_s": %s, "exit": %d, "cache_mode": "%s", "kind": "%s", "limit": %s, "max_tokens": %s, "workers": %s}\n' \
  "$started" "$finished" "$wall" "$status" "$CACHE_MODE" "${VIBE_RUN_KIND:-record}" "$LIMIT" "$MAX_TOKENS" "$WORKERS" >> "$OUT.runs.jsonl"
echo "wall time: ${wall} s (pytest exit status $status); report: $OUT.json; cache: $CACHE"
# pytest exits 1 when some items fail: the model failing tasks is a result, not an error.
if [ "$status" -le 1 ]; then exit 0; fi
exit "$status"
