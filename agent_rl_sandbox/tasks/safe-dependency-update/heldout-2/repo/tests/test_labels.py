from weekly.labels import label


def test_padded():
    assert label(2024, 1, 3) == "Report 2024-W01"
