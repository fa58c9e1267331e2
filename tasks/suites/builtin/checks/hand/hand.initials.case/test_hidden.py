from minicalc.strings import initials


def test_initials_lowercase_input():
    assert initials("alan mathison turing") == "AMT"


def test_initials_already_upper():
    assert initials("Grace Hopper") == "GH"
