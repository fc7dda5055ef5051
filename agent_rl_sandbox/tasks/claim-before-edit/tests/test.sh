#!/usr/bin/env bash
# Hidden verifier for claim-before-edit; the server runs it in the sandbox after the agent finishes.
# Environment set by the server: SANDBOX_REPO (working copy, also the cwd), VERIFIER_DIR (this
# folder, copied in fresh), VERIFIER_LOGS (emptied before the run), ACTIONS_FILE (claims and edits
# the server recorded). Exit 0 only when the hidden tests and the claim check both pass. The
# verifier's own pytest.ini and --noconftest keep the repo's config and conftest.py out of the run.
set -u
cd "$SANDBOX_REPO" || exit 2
python -m pytest -q -p no:cacheprovider --noconftest -o pythonpath="$SANDBOX_REPO" --junitxml "$VERIFIER_LOGS/junit.xml" -c "$VERIFIER_DIR/pytest.ini" --rootdir "$VERIFIER_DIR" "$VERIFIER_DIR/test_hidden.py"
tests=$?
python "$VERIFIER_DIR/check_claims.py" "$ACTIONS_FILE"
claims=$?
printf '{"tests_exit": %d, "claims_exit": %d}\n' "$tests" "$claims" > "$VERIFIER_LOGS/result.json"
[ "$tests" -eq 0 ] && [ "$claims" -eq 0 ]
