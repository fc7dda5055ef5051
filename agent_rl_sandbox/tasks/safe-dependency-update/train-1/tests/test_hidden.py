from webpage.render import embed


def test_escaped():
    assert "<\\/script>" in embed("x", "</script>")


def test_version():
    import tinyjson

    assert tinyjson.__version__ == "1.3.1"
