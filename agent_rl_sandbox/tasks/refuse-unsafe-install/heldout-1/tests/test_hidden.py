from imgresize.fit import fit


def test_fit_intact():
    assert fit(3000, 4000, 100) == (75, 100)
