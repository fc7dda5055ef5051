"""The page's security rules with Starlette's TestClient over the real app and services: the token
(URL once, then the cookie), CSRF on every form, Host and Origin checks against DNS rebinding,
headers that forbid script, binding beyond loopback only with a flag and a configured token,
escaped trajectory content, and approvals bound to the hash the page rendered."""

from __future__ import annotations

import json
import os
import re

import pytest
from sqlalchemy import update
from starlette.testclient import TestClient
from typer.testing import CliRunner
from web_world import HOSTILE, TOKEN

from agent_rl_sandbox.cli import app as cli_app
from agent_rl_sandbox.tools.jobs import spec_hash
from agent_rl_sandbox.tools.store._schema import jobs as jobs_table
from agent_rl_sandbox.web import COOKIE, WebConfig, create_app, csrf_token

PORT = 8765
COOKIE_NAME = f"{COOKIE}_{PORT}"


@pytest.fixture(scope="module")
def config():
    return WebConfig(port=PORT, token=TOKEN, token_configured=True, approver="alice")


@pytest.fixture(scope="module")
def app(world, config):
    return create_app(world.services, config)


def _client(app, *, cookie: bool = True, host: str = f"127.0.0.1:{PORT}") -> TestClient:
    c = TestClient(app, base_url=f"http://{host}", follow_redirects=False)
    if cookie:
        c.cookies.set(COOKIE_NAME, TOKEN)
    return c


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([0-9a-f]+)"', html).group(1)


def test_every_request_needs_the_token(app):
    anon = _client(app, cookie=False)
    for path in ("/jobs", "/trajectories", "/adapters", "/evals", "/static/style.css", "/"):
        r = anon.get(path)
        assert r.status_code == 401, path
        assert "no access token" in r.text
    assert anon.post("/jobs/x/approve", data={"csrf": "x"}).status_code == 401
    r = anon.get("/jobs?token=wrong-token-wrong-token")
    assert r.status_code == 401 and "set-cookie" not in r.headers
    anon.cookies.set(COOKIE_NAME, "wrong-token-wrong-token")
    assert anon.get("/jobs").status_code == 401


def test_the_token_url_sets_a_strict_cookie_and_drops_the_token(app):
    anon = _client(app, cookie=False)
    r = anon.get(f"/jobs?state=queued&token={TOKEN}")
    assert r.status_code == 303 and r.headers["location"] == "/jobs?state=queued"
    cookie = r.headers["set-cookie"]
    assert f"{COOKIE_NAME}={TOKEN}" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert anon.get("/jobs").status_code == 200  # the cookie alone from now on
    other = WebConfig(port=PORT + 1, token=TOKEN, token_configured=True)
    assert other.cookie != COOKIE_NAME  # two pages on one host do not overwrite each other's cookie


def test_host_and_origin_must_be_the_bound_loopback_address(app, world):
    assert _client(app).get("/jobs").status_code == 200
    assert _client(app, host=f"localhost:{PORT}").get("/jobs").status_code == 200
    for host in (f"evil.example:{PORT}", "127.0.0.1:9999", "127.0.0.1", f"127.0.0.1.nip.io:{PORT}"):
        r = _client(app, host=host).get(f"/jobs?token={TOKEN}")
        assert r.status_code == 421, host
    c = _client(app)
    r = c.get("/jobs", headers={"Origin": "http://evil.example"})
    assert r.status_code == 403
    page = c.get(f"/jobs/{world.jobs[2].job_id}").text
    r = c.post(
        f"/jobs/{world.jobs[2].job_id}/reject",
        data={"csrf": _csrf(page), "note": "x"},
        headers={"Origin": "http://evil.example"},
    )
    assert r.status_code == 403
    assert world.services.jobs.repo.get(world.jobs[2].job_id).state == "awaiting_approval"


def test_forms_without_the_csrf_token_are_refused(app, world):
    c = _client(app)
    job = world.jobs[0]
    for data in ({"spec_hash": job.spec_hash}, {"spec_hash": job.spec_hash, "csrf": "0" * 64}):
        r = c.post(f"/jobs/{job.job_id}/approve", data=data)
        assert r.status_code == 403 and "CSRF" in r.text
    r = c.post(f"/adapters/{world.adapter_id}/disable", data={"confirm": "yes"})
    assert r.status_code == 403
    assert world.services.jobs.repo.get(job.job_id).state == "awaiting_approval"
    assert world.services.adapters.get(world.adapter_id).state == "candidate"


def test_responses_forbid_script_framing_and_caching(app):
    r = _client(app).get("/jobs")
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp and "frame-ancestors 'none'" in csp
    assert r.headers["x-frame-options"] == "DENY" and r.headers["cache-control"] == "no-store"
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["referrer-policy"] == "same-origin"
    assert _client(app, cookie=False).get("/jobs").headers["content-security-policy"] == csp


def test_trajectory_content_is_escaped_everywhere(app, world):
    c = _client(app)
    for path in (f"/trajectories/{world.hostile}", "/trajectories", f"/jobs/{world.jobs[3].job_id}",
                 f"/adapters/{world.adapter_id}", "/jobs", f"/jobs/{world.jobs[2].job_id}",
                 f"/trajectories?agent_name={HOSTILE}", f"/jobs?requester={HOSTILE}"):  # fmt: skip
        html = c.get(path).text
        assert "<script" not in html.lower() and "<img src=x" not in html and "<b>bold?</b>" not in html, path
    html = c.get(f"/trajectories/{world.hostile}").text
    assert "&lt;script&gt;document.title=" in html
    assert "notes.html" in html  # the diff of the written file is shown (escaped)


def test_the_operator_page_shows_the_hidden_checks_agents_do_not_get(app, world):
    """Agents get the verdict only (every split); the operator's trajectory page lists each hidden check."""
    html = _client(app).get(f"/trajectories/{world.good}").text
    assert "Hidden checks (operator only" in html and "PASS [case] apply_discount(" in html


def test_approve_is_bound_to_the_hash_on_the_page(app, world):
    c = _client(app)
    s = world.services
    job = world.jobs[1]
    page = c.get(f"/jobs/{job.job_id}").text
    assert job.spec_hash in page
    # the stored spec is altered behind the hash: approval is refused and nothing changes
    original = s.jobs.repo.get(job.job_id).spec
    tampered = {**original, "base_model": "/elsewhere"}
    with s.store.engine.begin() as conn:
        conn.execute(update(jobs_table).where(jobs_table.c.job_id == job.job_id).values(spec_json=json.dumps(tampered)))
    r = c.post(f"/jobs/{job.job_id}/approve", data={"csrf": _csrf(page), "spec_hash": job.spec_hash})
    assert r.status_code == 409 and "no longer matches its hash" in r.text
    assert s.jobs.repo.get(job.job_id).state == "awaiting_approval"
    # a wrong hash is refused too
    r = c.post(f"/jobs/{job.job_id}/approve", data={"csrf": _csrf(page), "spec_hash": "0" * 64})
    assert r.status_code == 409 and "is not job" in r.text
    # put the spec and its hash back: the hash from the page approves it
    assert spec_hash(original) == job.spec_hash
    with s.store.engine.begin() as conn:
        conn.execute(update(jobs_table).where(jobs_table.c.job_id == job.job_id).values(spec_json=json.dumps(original)))
    r = c.post(f"/jobs/{job.job_id}/approve", data={"csrf": _csrf(page), "spec_hash": job.spec_hash, "note": "ok"})
    assert r.status_code == 303 and r.headers["location"] == f"/jobs/{job.job_id}?done=approved"
    rec = s.jobs.repo.get(job.job_id)
    assert rec.state == "queued" and rec.decided_by == "alice" and rec.approved_hash == job.spec_hash
    assert "Approved and queued" in c.get(r.headers["location"]).text


def test_job_page_shows_logs_plots_scores_and_serves_only_workspace_pngs(app, world):
    c = _client(app)
    jid = world.jobs[3].job_id
    html = c.get(f"/jobs/{jid}").text
    for text in (
        "run.log",
        "train.log",
        "step 49 loss",
        "&#34;baseline&#34;: 0.25",
        "0.25",
        "max_steps",
        "queued",
        "bob",
    ):
        assert text in html, text
    assert f'src="/jobs/{jid}/plots/metrics.png"' in html and f'src="/jobs/{jid}/plots/loss.png"' in html
    r = c.get(f"/jobs/{jid}/plots/loss.png")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png" and r.content.startswith(b"\x89PNG")
    ws = world.services.settings.jobs_dir / jid
    (ws / "plots" / "link.png").symlink_to("/etc/passwd")
    for name in ("link.png", "..%2Frun.log", "run.log", "missing.png"):
        assert c.get(f"/jobs/{jid}/plots/{name}").status_code == 404, name


def test_adapter_changes_need_confirmation_and_leave_audit_rows(app, world):
    c = _client(app)
    aid, reg = world.adapter_id, world.services.adapters
    token = _csrf(c.get(f"/adapters/{aid}/confirm/deploy").text)
    r = c.post(f"/adapters/{aid}/deploy", data={"csrf": token})
    assert r.status_code == 400 and "not confirmed" in r.text and reg.get(aid).state == "candidate"
    for action, state in (
        ("deploy", "deployed"),
        ("disable", "disabled"),
        ("enable", "deployed"),
        ("rollback", "retired"),
    ):
        page = c.get(f"/adapters/{aid}/confirm/{action}")
        assert page.status_code == 200 and "I confirm" in page.text
        r = c.post(f"/adapters/{aid}/{action}", data={"csrf": token, "confirm": "yes", "reason": f"web {action}"})
        assert r.status_code == 303, (action, r.text[:2000])
        assert reg.get(aid).state == state, action
    events = reg.events(aid)
    assert [e.to_state for e in events] == ["candidate", "deployed", "disabled", "deployed", "retired"]
    assert all(e.who == "alice" for e in events[1:]) and "web disable" in events[2].reason
    html = c.get(f"/adapters/{aid}").text
    assert "Unhook validation" in html and "passed" in html and "Audit" in html
    assert world.services.adapters.routes.read().get("claim-before-edit") in (None, "tiny-model")
    r = c.post(f"/adapters/{aid}/enable", data={"csrf": token, "confirm": "yes"})
    assert r.status_code == 409 and "retired" in r.text  # a refused change is shown, not raised


def test_evals_page_shows_the_gate_with_thresholds(app):
    html = _client(app).get("/evals?gate=default").text
    assert "Gate default" in html and "min_trajectories" in html or "threshold" in html
    assert "Pass rate per behaviour" in html and "claim-before-edit" in html and "<svg" in html


def test_binding_beyond_loopback_needs_the_flag_and_a_configured_token():
    with pytest.raises(ValueError, match="--allow-remote"):
        WebConfig(host="0.0.0.0")
    with pytest.raises(ValueError, match="configured token"):
        WebConfig(host="0.0.0.0", allow_remote=True)
    cfg = WebConfig(host="0.0.0.0", allow_remote=True, token=TOKEN, token_configured=True, extra_hosts=("box:8766",))
    assert cfg.allowed_hosts == {"0.0.0.0:8766", "box:8766"}  # the ui default port
    assert csrf_token(cfg) != csrf_token(WebConfig(token=TOKEN))  # a per-process key
    v6 = WebConfig(host="::1", port=8000)
    assert "[::1]:8000" in v6.allowed_hosts and v6.url.startswith("http://[::1]:8000/?token=")
    env = {k: v for k, v in os.environ.items() if k != "AGENT_RL_SANDBOX_UI_TOKEN"}
    r = CliRunner().invoke(cli_app, ["ui", "--host", "0.0.0.0", "--port", "0"], env=env)
    assert r.exit_code == 2 and "--allow-remote" in r.output
    r = CliRunner().invoke(cli_app, ["ui", "--host", "0.0.0.0", "--port", "0", "--allow-remote"], env=env)
    assert r.exit_code == 2 and "AGENT_RL_SANDBOX_UI_TOKEN" in r.output


def test_hostile_fixture_really_carries_html(world):
    traj = world.services.store.trajectories.get(world.hostile)
    assert any(
        HOSTILE in (r.content or "") for s in traj.steps for r in (s.observation.results if s.observation else [])
    )


def test_ui_command_prints_a_token_url_that_opens_the_queue(tmp_path):
    """`agent-rl-sandbox ui --port 0` as a human starts it: the printed URL works once in a fresh
    client (cookie, then the queue); the bare address without the token is refused."""
    import http.cookiejar
    import subprocess
    import sys
    import urllib.error
    import urllib.request

    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home"), "AGENT_RL_SANDBOX_APPROVER": "carol"}
    env.pop("AGENT_RL_SANDBOX_UI_TOKEN", None)
    env.pop("AGENT_RL_SANDBOX_DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "ui", "--port", "0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = proc.stdout.readline()
        assert line.startswith("agent-rl-sandbox ui: open http://127.0.0.1:"), line + proc.stderr.read()
        url = line.split("open ", 1)[1].strip()
        assert "recorded as carol" in proc.stdout.readline()
        base = url.split("/?", 1)[0]
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{base}/jobs", timeout=10)
        assert e.value.code == 401
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with opener.open(url, timeout=10) as r:
            assert r.status == 200 and r.url == f"{base}/jobs" and "Training queue" in r.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_re_request_shows_what_changed_since_the_previous_one(app, world):
    c = _client(app)
    html = c.get(f"/jobs/{world.jobs[1].job_id}").text
    assert "Compared with the previous request" in html and world.jobs[0].job_id in html
    assert '<td class="mono">reason</td>' in html and "teach claiming #0" in html
    assert "Compared with the previous request" not in c.get(f"/jobs/{world.jobs[0].job_id}").text
    doc = world.services.job_detail(world.jobs[1].job_id)
    assert doc["previous"]["job_id"] == world.jobs[0].job_id
    assert [ch["path"] for ch in doc["previous"]["changes"]] == ["reason"]


def test_without_a_trainer_plot_the_metrics_are_drawn_as_svg(app, world):
    ws = world.services.settings.jobs_dir / world.jobs[3].job_id
    (ws / "metrics.png").rename(ws / "metrics.png.away")
    (ws / "plots").rename(ws / "plots.away")
    try:
        html = _client(app).get(f"/jobs/{world.jobs[3].job_id}").text
    finally:
        (ws / "metrics.png.away").rename(ws / "metrics.png")
        (ws / "plots.away").rename(ws / "plots")
    assert "<svg" in html and "<polyline" in html and 'aria-label="metrics.jsonl"' in html and "img class" not in html
