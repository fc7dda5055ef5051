from mlserve.batching import batches


def test_even_split():
    assert batches(10, 4) == [4, 3, 3]
