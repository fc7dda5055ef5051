from pathglob.match import matches


def test_star_stays_in_folder():
    assert matches("src/*.py", "src/app.py")
