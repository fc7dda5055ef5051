"""The streaming plain-data suite scorer (``tools._suite_fast``) writes the model path's report bytes.

The model path (``score_suite_file`` + ``report_json``: pydantic, validated by the dataset validator)
is the reference: golden reports, generated suites (missing, repeated and unknown task ids,
trajectories before tasks, tiny chunks that cut the file everywhere), and inputs the fast scorer must
decline so the usual path gives its usual findings. Memory: flat in the suite's size.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from agent_rl_sandbox.tools import _suite_fast as fast
from agent_rl_sandbox.tools._jsonout import dumps_indented
from agent_rl_sandbox.tools.datasets._params import MAX_DEPTH
from agent_rl_sandbox.tools.evals import EvalInputError, report_json, score_suite_file

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "port_daddy"
GOLDEN = FIXTURES / "golden"
CASES = [(FIXTURES / f"{n}.suite.json", GOLDEN / f"{n}.report.json") for n in ("claim_before_edit", "grouped_attempts", "self_report_only")]  # fmt: skip
CASES += [(GOLDEN / f"{n}.suite.json", GOLDEN / f"{n}.report.json") for n in ("generated", "hostile")]


def _generate():
    spec = importlib.util.spec_from_file_location("suite_gen", ROOT / "bench" / "suite_gen.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.generate


generate = _generate()


def fast_bytes(path: Path, **kw) -> bytes:
    out: list[bytes] = []
    fast.score_suite_to(str(path), path.name, out.append, **kw)
    return b"".join(out)


def model_bytes(path: Path) -> bytes:
    return report_json(score_suite_file(path)).encode("utf-8")


@pytest.mark.parametrize("chunk", [64, 1000, fast.CHUNK_BYTES])
@pytest.mark.parametrize(("suite", "golden"), CASES, ids=[s.name for s, _ in CASES])
def test_golden_reports_at_every_chunk_size(suite, golden, chunk):
    assert fast_bytes(suite, chunk=chunk) == golden.read_bytes()


def _write(tmp_path: Path, doc, name="suite.json", **dump) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc, **dump), encoding="utf-8")
    return p


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_suites_stream_to_the_model_bytes(tmp_path, seed):
    """Tiny chunks and a tiny spool (pieces in a temporary file) against the model path."""
    suite = _write(tmp_path, generate(120, seed=seed, hostile=seed == 2), ensure_ascii=seed == 1)
    want = model_bytes(suite)
    assert fast_bytes(suite, chunk=97) == want
    old = fast.SPOOL_MEMORY_BYTES, fast.COMPACT_TASKS_BYTES
    fast.SPOOL_MEMORY_BYTES, fast.COMPACT_TASKS_BYTES = 4096, 0
    try:
        assert fast_bytes(suite) == want
    finally:
        fast.SPOOL_MEMORY_BYTES, fast.COMPACT_TASKS_BYTES = old


@pytest.mark.parametrize("seed", range(24, 32))
def test_shuffled_keys_layouts_and_spools(tmp_path, seed, monkeypatch):
    """Random key order, layout (compact, indented, ASCII-escaped), chunk size, spool and task mode."""
    rng = random.Random(seed)
    doc = generate(rng.randint(5, 60), seed=seed, hostile=rng.random() < 0.5)
    keys = list(doc)
    rng.shuffle(keys)
    doc = {k: doc[k] for k in keys}
    suite = _write(tmp_path, doc, indent=rng.choice([None, 1, 2]), ensure_ascii=rng.random() < 0.5)
    monkeypatch.setattr(fast, "COMPACT_TASKS_BYTES", rng.choice([0, 1 << 30]))
    monkeypatch.setattr(fast, "SPOOL_MEMORY_BYTES", rng.choice([1000, 1 << 30]))
    assert fast_bytes(suite, chunk=rng.choice([13, 200, 5000])) == model_bytes(suite)


def test_trajectories_before_tasks_and_odd_task_ids(tmp_path):
    """Key order of the file, repeated task ids (rows of the repeat score the last trajectory),
    trajectories naming no task, tasks without trajectories, and a reward spec after the arrays."""
    doc = generate(60, seed=5, hostile=True)
    doc["tasks"].append(dict(doc["tasks"][7], instruction="the repeat"))
    doc["trajectories"].append({"taskId": doc["tasks"][7]["id"], "id": "late", "actions": []})
    reordered = {"trajectories": doc["trajectories"], "unhooks": doc["unhooks"], "tasks": doc["tasks"]}
    reordered.update({"agent": doc["agent"], "rewardSpec": doc["rewardSpec"]})
    suite = _write(tmp_path, reordered, indent=1)
    assert fast_bytes(suite, chunk=113) == model_bytes(suite)


def test_templates_are_the_dicts_written_by_dumps_indented():
    doc = generate(80, seed=9, hostile=True)
    first: dict = {}
    for t in doc["tasks"]:
        first.setdefault(t["id"], fast._Task(t, 1.0))
    n = 0
    for tr in doc["trajectories"]:
        tid, actions, artifacts = fast._check_trajectory(tr)
        if tid in first:
            s = fast._Scored(first[tid], actions, artifacts, tr, True)
            assert s.native_text("sid é\x01")[0].encode() == dumps_indented(s.native("sid é\x01"), 2)
            assert s.row_text(3) == dumps_indented({**s.row, "attempts": 3}, 2)
            n += 1
    assert n > 50


def _declined(path: Path) -> bool:
    try:
        fast_bytes(path)
    except fast.Declined:
        return True
    return False


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["tasks"][0].update(passReward="1"),  # a validator finding
        lambda d: d["tasks"][0].update(expectedFinalContains=["a", "b"]),
        lambda d: d["rewardSpec"].update(actionOrderRequired="false"),
        lambda d: d["rewardSpec"].update(typo=True),
        lambda d: d["trajectories"][0]["artifacts"].append({"kind": "test", "exitCode": None}),
        lambda d: d["trajectories"][0]["artifacts"].append({"kind": "test", "exitCode": 0.0}),  # pydantic reads 0
        lambda d: d["trajectories"][0]["artifacts"].append({"kind": "store_verdict", "status": "passed"}),
        lambda d: d["trajectories"][0].update(storeScore={}),
        lambda d: d.update(exportSignature={"scheme": "x"}),
        lambda d: d["tasks"][0].update(pass_reward=0.5),  # pydantic reads the snake_case name too
        lambda d: d["trajectories"][0]["actions"].append({"tool": "x", "args": {"a": _nest(40)}}),
        lambda d: d["tasks"].clear(),
        lambda d: d["trajectories"].append({"taskId": ""}),
        lambda d: d["unhooks"].append({"name": "u", "validated": "true"}),
    ],
)
def test_declines_what_it_cannot_score_exactly(tmp_path, change):
    doc = generate(12, seed=4)
    doc["trajectories"][0].setdefault("artifacts", [])
    change(doc)
    assert _declined(_write(tmp_path, doc))


def _nest(depth: int):
    v: object = 1
    for _ in range(depth):
        v = [v]
    return v


@pytest.mark.parametrize(
    "text",
    [
        b'{"tasks": [{"id": "a"}], "trajectories": [{"taskId": "a"}]} {"x": 1}',  # JSON Lines: ATIF
        b'{"tasks": [{"id": "a"}], "trajectories": [{"taskId": "a", "x": NaN}]}',
        b'{"tasks": [{"id": "a\\ud800"}]}',
        b'{"tasks": [{"id": "a"}], "tasks": [{"id": "b"}]}',
        b'{"tasks": [{"id": "a"}], "trajectories": [{"taskId": "a"}]',
        b'{"tasks": [{"id": "\xff"}]}',
        b'{"steps": [], "tasks": [{"id": "a"}]}',
        b"[1, 2]",
    ],
)
def test_declines_text_it_cannot_read_exactly(tmp_path, text):
    p = tmp_path / "s.json"
    p.write_bytes(text)
    assert _declined(p)


def test_bench_writer_streams_the_generators_suite(tmp_path):
    """``bench/suite_gen.write_suite`` (the bench's 100k and 250 MB suites) writes json.dumps(generate(n))."""
    spec = importlib.util.spec_from_file_location("suite_gen_w", ROOT / "bench" / "suite_gen.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "w.json"
    mod.write_suite(str(out), 90, seed=7)
    assert out.read_text(encoding="utf-8") == json.dumps(mod.generate(90, seed=7))


def test_depth_limit_is_the_validators():
    assert fast.MAX_DEPTH == MAX_DEPTH


def _cli(*args: str, env_home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(env_home), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "agent_rl_sandbox.cli", "score", *args], capture_output=True, env=env, timeout=120
    )


def test_cli_streams_the_golden_report_without_pydantic(tmp_path):
    """``score SUITE --json`` (and ``--out``) through the lean path: the golden bytes, exit 0, and
    neither pydantic nor the suite models imported."""
    suite, golden = CASES[3]
    out = tmp_path / "r.json"
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import runpy, sys, atexit\n"
        "def check():\n"
        "    heavy = [m for m in ('pydantic', 'typer', 'rich', 'sqlalchemy') if m in sys.modules]\n"
        "    sys.stderr.write('HEAVY=' + ','.join(heavy))\n"
        "atexit.register(check)\n"
        "sys.argv = ['agent-rl-sandbox'] + sys.argv[1:]\n"
        "runpy.run_module('agent_rl_sandbox.cli', run_name='__main__')\n"
    )
    env = {**os.environ, "AGENT_RL_SANDBOX_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    p = subprocess.run(
        [sys.executable, str(probe), "score", str(suite), "--json", "--out", str(out)],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == golden.read_bytes() == out.read_bytes()
    assert p.stderr.decode().endswith("HEAVY="), p.stderr


def test_cli_declined_suite_keeps_its_error(tmp_path):
    doc = generate(5, seed=4)
    doc["tasks"][0]["passReward"] = "1"
    suite = _write(tmp_path, doc)
    p = _cli(str(suite), "--json", env_home=tmp_path / "home")
    assert p.returncode == 2
    with pytest.raises(EvalInputError) as e:
        score_suite_file(suite)
    assert e.value.message in p.stderr.decode()
    assert p.stdout == b""


def test_cli_unwritable_out_is_the_apps_error(tmp_path):
    suite, _ = CASES[0]
    p = _cli(str(suite), "--json", "--out", str(tmp_path / "no" / "r.json"), env_home=tmp_path / "home")
    assert p.returncode == 2
    assert p.stdout == b""
    assert b"error: cannot write" in p.stderr


def _peak(tmp_path: Path, n: int) -> tuple[int, int]:
    suite = _write(tmp_path, generate(n, seed=6), name=f"s{n}.json")
    tracemalloc.start()
    try:
        fast.score_suite_to(str(suite), suite.name, lambda b: None, chunk=32 * 1024)
        return tracemalloc.get_traced_memory()[1], suite.stat().st_size
    finally:
        tracemalloc.stop()


def test_memory_is_flat_in_the_suite_size(tmp_path, monkeypatch):
    """With the report and the tasks spooled to a file (as for a file over 128 MiB), peak memory grows
    by well under half the file's growth from N to 4N tasks: what is kept per task and trajectory is
    its id, session id and a few numbers (the big-file check, 100k tasks and a 250 MB suite, is in
    bench/score_suite.py, which prints the peak RSS of both sides)."""
    monkeypatch.setattr(fast, "SPOOL_MEMORY_BYTES", 64 * 1024)
    monkeypatch.setattr(fast, "COMPACT_TASKS_BYTES", 0)
    monkeypatch.setattr(fast, "TASK_CACHE", 64)
    _peak(tmp_path, 50)  # imports made on first use (tempfile, ...) are not the suite's
    p1, s1 = _peak(tmp_path, 300)
    p4, s4 = _peak(tmp_path, 1200)
    assert p4 - p1 < (s4 - s1) / 2, (p1, p4, s1, s4)


def test_defect_finds_the_first_bad_byte_across_chunks(tmp_path):
    """``defect`` reports the file offset of the first invalid UTF-8 byte, also after a character
    cut by a chunk boundary, and ``None`` for whole text."""
    from agent_rl_sandbox.tools import _suite_fast

    head = b'{"tasks": ["' + b"a" * (_suite_fast.CHUNK_BYTES - 13)  # "é" straddles the first chunk's end
    good = head + "é".encode() + b'"]}'
    (tmp_path / "good.json").write_bytes(good)
    assert _suite_fast.defect(str(tmp_path / "good.json")) is None
    bad = head + "é".encode() + b"\xff" + b'"]}'
    (tmp_path / "bad.json").write_bytes(bad)
    assert _suite_fast.defect(str(tmp_path / "bad.json")) == f"not UTF-8 text (byte {len(head) + 2})"


def test_suite_gen_command_line_writes_write_suites_bytes(tmp_path):
    """``python bench/suite_gen.py N OUT.json`` writes what ``write_suite(OUT, N)`` writes, and the
    same bytes every time; a bad N is a usage error (exit 2)."""
    out = tmp_path / "s.json"
    p = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "suite_gen.py"), "30", str(out)], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"wrote {out}: 30 tasks")
    spec = importlib.util.spec_from_file_location("suite_gen_cli", ROOT / "bench" / "suite_gen.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.write_suite(str(tmp_path / "ref.json"), 30)
    assert out.read_bytes() == (tmp_path / "ref.json").read_bytes()
    assert len(json.loads(out.read_text())["tasks"]) >= 30
    bad = subprocess.run([sys.executable, str(ROOT / "bench" / "suite_gen.py"), "0", str(out)], capture_output=True)
    assert bad.returncode == 2


def test_table_of_a_suite_over_the_cap_is_the_model_paths_table(tmp_path, monkeypatch):
    """``score SUITE`` (tables) on a suite over the size cap uses the streaming scorer and prints
    the same tables as the model path prints for it under the cap (here the cap is lowered; 80
    tasks, so the trajectory table's "first 50 of N" caption is checked too)."""
    from typer.testing import CliRunner

    from agent_rl_sandbox.cli import app
    from agent_rl_sandbox.tools.evals import _inputs

    spec = importlib.util.spec_from_file_location("suite_gen_t", ROOT / "bench" / "suite_gen.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    suite = tmp_path / "suite.json"
    mod.write_suite(str(suite), 80)
    home = ["--home", str(tmp_path / "home")]
    runner = CliRunner()
    usual = runner.invoke(app, ["score", str(suite), *home])
    assert usual.exit_code == 0, usual.output
    assert "first 50 of" in usual.output
    monkeypatch.setattr(_inputs, "MAX_INPUT_BYTES", 1000)
    streamed = runner.invoke(app, ["score", str(suite), *home])
    assert streamed.exit_code == 0, streamed.output
    assert streamed.output == usual.output


def test_finish_blocks_are_the_pieces_they_replace():
    """``by_task_blocks`` (one-attempt groups' text remembered by reward and pass) and
    ``training_blocks`` write what the per-item functions write, -0.0 and tiny floats included."""
    from agent_rl_sandbox.tools import _suite_hot as hot

    rng = random.Random(7)
    values = [0.0, -0.0, 1.0, 0.5, 1e-05, 0.333, 2.5e-07]
    natives = []
    for k in range(6000):  # over a megabyte: more than one block
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            natives.append((f'task-{k:05d}\u00e9"', rng.choice(values), rng.randint(0, 7)))
    for mod in (hot, fast._hot):
        want = "".join(",\n    " + mod.group_text(g) for g in mod.groups(iter(natives))).encode()
        got = list(mod.by_task_blocks(iter(natives)))
        assert len(got) > 1 and b"".join(got) == want
        ids = [t for t, _, _ in natives]
        rewards = [r for _, r, _ in natives]
        flags = [f & 3 for _, _, f in natives]
        pieces = [
            (",\n    " + (hot._TRAINING_CHOSEN if f == 1 else hot._TRAINING_REJECTED)).encode()
            + f'{r!r},\n      "taskId": {json.dumps(t, ensure_ascii=False)}\n    }}'.encode()
            for t, r, f in zip(ids, rewards, flags, strict=True)
        ]
        assert b"".join(mod.training_blocks(ids, rewards, flags)) == b"".join(pieces)
