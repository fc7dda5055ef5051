from webpage.render import embed


def test_embed():
    assert embed("Page Data", {"a": 1}) == '<script>window["page-data"] = {"a": 1};</script>'


def test_script_breakout_is_escaped():
    html = embed("x", {"bio": "</script><script>alert(1)</script>"})
    assert html.count("</script>") == 1
