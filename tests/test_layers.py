"""The package's layers, checked: the import-linter contracts in pyproject.toml hold and are active
(adding a face import inside ``tools/`` breaks them), no module imports itself in a circle, and
building the services touches no process-wide state (signal handlers, ``atexit``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "HOME": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=tree, env=env, capture_output=True, text=True, timeout=120
    )


def _copy_package(dst: Path) -> Path:
    """The package's Python code and pyproject.toml under ``dst`` (task fixtures left out)."""
    shutil.copy(ROOT / "pyproject.toml", dst / "pyproject.toml")
    shutil.copytree(
        ROOT / "agent_rl_sandbox",
        dst / "agent_rl_sandbox",
        ignore=lambda d, names: [
            n for n in names if n == "__pycache__" or (Path(d).name == "tasks" and n != "__init__.py")
        ],
    )
    return dst


def test_import_contracts_hold():
    r = _lint_imports(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "broken" not in r.stdout.lower().replace("0 broken", "")


@pytest.mark.parametrize(
    ("path", "line", "broken"),
    [
        (
            "tools/_face_import.py",
            "from agent_rl_sandbox.server import app\n",
            "tools is not allowed to import agent_rl_sandbox.server",
        ),
        (
            "tools/_root_import.py",
            "from agent_rl_sandbox import services\n",
            "tools is not allowed to import agent_rl_sandbox.services",
        ),
        (
            "schemas/_up.py",
            "import agent_rl_sandbox.tools.errors\n",
            "schemas is not allowed to import agent_rl_sandbox.tools",
        ),
        ("tools/_torch.py", "import torch\n", "agent_rl_sandbox.tools is not allowed to import torch"),
    ],
)
def test_import_contracts_are_active(tmp_path, path, line, broken):
    tree = _copy_package(tmp_path)
    (tree / "agent_rl_sandbox" / path).write_text(line)
    r = _lint_imports(tree)
    assert r.returncode == 1, r.stdout + r.stderr
    assert broken in " ".join(r.stdout.split()), r.stdout


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_no_import_cycles():
    graph = grimp.build_graph("agent_rl_sandbox", exclude_type_checking_imports=True)
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_cycle(tmp_path):
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyc import b\n")
    (pkg / "b.py").write_text("from cyc import c\n")
    (pkg / "c.py").write_text("import cyc.a\n")
    sys.path.insert(0, str(tmp_path))
    try:
        assert _cycles(grimp.build_graph("cyc")) == [["cyc.a", "cyc.b", "cyc.c"]]
    finally:
        sys.path.remove(str(tmp_path))


def test_building_services_installs_no_process_wide_handlers(tmp_path):
    """The domain runs inside any host process (uvicorn, a worker): only an entry point that owns
    the process arms signal handlers and atexit (``Services.close_at_exit``)."""
    script = textwrap.dedent(
        """
        import atexit, signal, sys
        from pathlib import Path
        from agent_rl_sandbox.services import Services
        from agent_rl_sandbox.settings import Settings
        import agent_rl_sandbox.tools.store  # SQLAlchemy's own atexit hooks, registered at its import
        before = (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP), atexit._ncallbacks())
        s = Services.build(Settings(home=Path(sys.argv[1])))
        after = (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP), atexit._ncallbacks())
        s.close_at_exit()
        armed = (signal.getsignal(signal.SIGTERM), atexit._ncallbacks())
        s.close()
        print(before == after, armed[0] is not signal.SIG_DFL, armed[1] == before[2] + 1)
        """
    )
    r = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "home")], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True"]
