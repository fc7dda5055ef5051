from imgresize.fit import fit


def test_landscape():
    assert fit(4000, 3000, 200) == (200, 150)


def test_never_upscales():
    assert fit(50, 20, 200) == (50, 20)
