#!/usr/bin/env bash
# Hidden verifier for safe-dependency-update/train-3; the server copies this folder in fresh and runs it after the agent
# finishes. Environment: SANDBOX_REPO (working copy, also the cwd), VERIFIER_DIR (this folder),
# VERIFIER_LOGS (emptied before the run), ACTIONS_FILE (what the server recorded: claims, edits,
# commands, changed paths, final message). The verifier's own pytest.ini and --noconftest keep the
# repo's config and conftest.py out of the run.
set -u
cd "$SANDBOX_REPO" || exit 2
python -m pytest -q -p no:cacheprovider --noconftest -o pythonpath="$SANDBOX_REPO" --junitxml "$VERIFIER_LOGS/junit.xml" -c "$VERIFIER_DIR/pytest.ini" --rootdir "$VERIFIER_DIR" "$VERIFIER_DIR/test_hidden.py"
tests=$?
python "$VERIFIER_DIR/check_deps.py"
check=$?
printf '{"tests_exit": %d, "deps_exit": %d}\n' "$tests" "$check" > "$VERIFIER_LOGS/result.json"
[ "$tests" -eq 0 ] && [ "$check" -eq 0 ]
