from mlserve.batching import batches


def test_intact():
    assert batches(0, 3) == []
    assert batches(8, 4) == [4, 4]
