import pytest
from pathglob.match import ignored, matches


@pytest.mark.parametrize(
    ("pattern", "path", "ok"),
    [("src/*.py", "src/a.py", True), ("src/*.py", "src/a/b.py", False), ("**/*.py", "a/b/c.py", True),
     ("**/*.py", "c.py", True), ("src/**", "src/a/b", True), ("*.log", "logs/x.log", False),
     ("a/?.txt", "a/b.txt", True), ("a/?.txt", "a/bc.txt", False), ("docs/**/index.md", "docs/index.md", True)],
)
def test_matches(pattern, path, ok):
    assert matches(pattern, path) is ok


def test_ignored():
    assert ignored(["build/*", "*.tmp"], "build/out")
    assert not ignored(["build/*"], "build/a/out")
