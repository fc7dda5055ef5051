from weekly.labels import label


def test_labels():
    assert label(2024, 12, 30) == "Report 2025-W01"
    assert label(2024, 6, 14) == "Report 2024-W24"
