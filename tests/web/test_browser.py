"""The page in a real headless browser: the distribution's Chromium (``/usr/bin/chromium``, installed
by ``.ci/run``) driven by Playwright's Python package (no browser download). Against the app served
by uvicorn on a loopback port over real services: open the queue, open a job, approve it and see the
state change; reject another; cancel a queued one; a request without the token is refused; a form
without its CSRF token and a form posted from another origin are refused; a spec changed after the
page was rendered makes the approval fail; a trajectory whose steps carry HTML and script renders
inert and so do a job reason, a gate report and echoed filter values (checked with the page's CSP
bypassed, so escaping alone is what is tested). Screenshots of the
queue, a job and trajectory pages are written under ``test-artifacts/web/`` (git-ignored)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from sqlalchemy import update
from web_world import HOSTILE

from agent_rl_sandbox.tools.jobs import spec_hash
from agent_rl_sandbox.tools.store._schema import jobs as jobs_table

CHROMIUM = os.environ.get("AGENT_RL_SANDBOX_TEST_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if not (shutil.which(CHROMIUM) or Path(CHROMIUM).is_file()):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)"
    return None


if (why := _missing()) is not None:
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"browser tests cannot run in CI: {why}")
    pytest.skip(why, allow_module_level=True)

from playwright.sync_api import expect, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def browser(live):
    # after `live` (and its world, which runs episodes in an event loop): Playwright's sync API runs
    # its own loop on this thread
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, live):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(15_000)
    pg.goto(live.url)  # the URL `ui` prints: sets the cookie, redirects to the queue
    yield pg
    ctx.close()


def _shot(page, name: str, full_page: bool = True) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    assert path.stat().st_size > 1000
    return path


def _base(live) -> str:
    return f"http://127.0.0.1:{live.port}"


def test_open_queue_open_job_approve_and_see_the_state_change(page, world, live):
    job = world.jobs[0]
    assert page.url == f"{_base(live)}/jobs"
    row = page.locator(f'tr[data-job="{job.job_id}"]')
    expect(row).to_contain_text("awaiting_approval")
    expect(row).to_contain_text("mcp:agent-a")
    expect(row).to_contain_text("max_steps=50")
    _shot(page, "queue")
    row.get_by_role("link", name=job.job_id).click()
    expect(page.locator("#spec-hash")).to_have_text(job.spec_hash)
    expect(page.locator("#validation")).to_contain_text("valid: 2 rows")
    expect(page.locator("#spec")).to_contain_text('"base_model": "tiny-model"')
    _shot(page, "job")
    page.set_viewport_size({"width": 1000, "height": 640})
    _shot(page, "job-top", full_page=False)  # the README's screenshot (docs/ui-job.png) comes from this one
    page.set_viewport_size({"width": 1280, "height": 900})
    page.locator("#approve-form textarea").fill("looks right")
    page.locator("#approve").click()
    expect(page.locator("#message")).to_have_text("Approved and queued for a worker.")
    expect(page.locator("#state")).to_have_text("queued")
    expect(page.locator("#events")).to_contain_text("approved by alice: looks right")
    page.get_by_role("link", name="Queue").click()
    expect(page.locator(f'tr[data-job="{job.job_id}"]')).to_contain_text("queued")
    assert world.services.jobs.repo.get(job.job_id).approved_hash == job.spec_hash


def test_reject_another_and_cancel_a_queued_one(page, world, live):
    job = world.jobs[1]
    page.goto(f"{_base(live)}/jobs/{job.job_id}")
    page.locator("#reject-form textarea").fill("dataset too small")
    page.locator("#reject").click()
    expect(page.locator("#state")).to_have_text("rejected")
    expect(page.locator("#approve")).to_have_count(0)
    assert world.services.jobs.repo.get(job.job_id).decision_note == "dataset too small"
    queued = world.jobs[3]
    page.goto(f"{_base(live)}/jobs/{queued.job_id}")
    expect(page.locator("#state")).to_have_text("queued")
    expect(page.locator("#log-train-log")).to_contain_text("step 49 loss")
    expect(page.locator("img.plot")).to_have_count(2)  # metrics.png (the trainers') and plots/loss.png
    assert page.locator("img.plot").evaluate_all("imgs => imgs.map(i => i.naturalWidth)") == [1, 1]  # both loaded
    _shot(page, "job-with-workspace")
    page.locator("#cancel").click()
    expect(page.locator("#state")).to_have_text("cancelled")


def test_a_spec_changed_after_rendering_makes_the_approval_fail(page, world, live):
    s, job = world.services, world.jobs[2]
    page.goto(f"{_base(live)}/jobs/{job.job_id}")
    expect(page.locator("#spec-hash")).to_have_text(job.spec_hash)
    changed = {**s.jobs.repo.get(job.job_id).spec, "caps": {"max_steps": 99999, "timeout_s": 600, "max_gpu_hours": 1.0}}
    with s.store.engine.begin() as conn:  # the request is changed (and re-hashed) while the page is open
        conn.execute(
            update(jobs_table)
            .where(jobs_table.c.job_id == job.job_id)
            .values(spec_json=json.dumps(changed), spec_hash=spec_hash(changed))
        )
    page.locator("#approve").click()
    expect(page.locator("#error")).to_contain_text(f"is not job {job.job_id}'s spec hash; nothing was approved")
    expect(page.locator("#state")).to_have_text("awaiting_approval")
    expect(page.locator("#spec-hash")).to_have_text(spec_hash(changed))  # the page now shows what changed
    assert s.jobs.repo.get(job.job_id).state == "awaiting_approval"


def test_a_request_without_the_token_is_refused(browser, live):
    ctx = browser.new_context()
    pg = ctx.new_page()
    for path in ("/jobs", "/trajectories", "/static/style.css"):
        r = pg.goto(f"{_base(live)}{path}")
        assert r.status == 401, path
        assert "no access token" in pg.content()
    r = pg.goto(f"http://localhost:{live.port}/jobs?token=not-the-token-at-all")
    assert r.status == 401
    ctx.close()


def test_forged_forms_are_refused(page, world, live):
    job = world.jobs[2]
    page.goto(f"{_base(live)}/jobs/{job.job_id}")
    page.locator('#reject-form input[name="csrf"]').evaluate("e => e.remove()")  # the form as a forger has it
    page.locator("#reject").click()
    assert "missing or wrong CSRF token" in page.content()
    # a page of another origin posting the same form (the browser sends its Origin)
    page.set_content(
        f'<form method="post" action="{_base(live)}/jobs/{job.job_id}/reject">'
        f'<input name="csrf" value="forged"><input name="note" value="x"><button id="go">go</button></form>'
    )
    page.locator("#go").click()
    assert "refused" in page.content()
    assert world.services.jobs.repo.get(job.job_id).state == "awaiting_approval"


def test_a_hostile_trajectory_renders_inert(browser, world, live):
    ctx = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 900})  # escaping alone must hold
    pg = ctx.new_page()
    dialogs: list[str] = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.goto(live.url)
    for path in (f"/trajectories?agent_name=evil{HOSTILE}", "/jobs", f"/jobs/{world.jobs[2].job_id}",
                 f"/adapters/{world.adapter_id}"):  # fmt: skip
        pg.goto(f"{_base(live)}{path}")  # filter values echoed back, an agent's job reason, a gate report
        assert pg.evaluate("() => document.querySelectorAll('script, img[src=x], b').length") == 0, path
    pg.goto(f"{_base(live)}/trajectories/{world.hostile}")
    for d in pg.locator("details").all():
        d.evaluate("d => d.open = true")
    pg.wait_for_timeout(300)
    assert pg.evaluate("() => document.querySelectorAll('script').length") == 0
    assert pg.evaluate("() => document.querySelectorAll('img[src=x], b').length") == 0
    assert pg.evaluate("() => window.__pwned === undefined && !document.title.startsWith('PWNED')")
    assert dialogs == []
    expect(pg.locator(".step").first).to_be_visible()
    assert HOSTILE in pg.locator("body").inner_text()  # shown as text, verbatim
    expect(pg.locator("#criteria")).to_contain_text("claims_before_edit")
    _shot(pg, "trajectory-hostile")
    ctx.close()


def test_a_good_trajectory_shows_scores_with_evidence_links_and_diffs(page, world, live):
    page.goto(f"{_base(live)}/trajectories")
    page.get_by_role("link", name=world.good).click()
    expect(page.locator("#score")).to_contain_text("passed")
    link = page.locator("#criteria a[href^='#step-']").first
    target = link.get_attribute("href")
    link.click()
    assert page.url.endswith(target)
    expect(page.locator(target)).to_be_visible()
    expect(page.locator("pre.diff").first).to_contain_text("+++ b/")
    expect(page.locator(".step .meta").first).to_contain_text("recorded by server")
    _shot(page, "trajectory")
    page.goto(f"{_base(live)}/evals?gate=default")
    expect(page.locator("#gate-checks")).to_be_visible()
    expect(page.locator("#by-behaviour")).to_contain_text("claim-before-edit")
    _shot(page, "evals")
