from gym.strings import labels_upto


def test_labels_upto_0():
    assert labels_upto(2) == ['1', '2', '3']


def test_labels_upto_1():
    assert labels_upto(0) == ['1']


def test_labels_upto_2():
    assert labels_upto(4) == ['1', '2', '3', '4', '5']
