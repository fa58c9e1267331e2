"""Baskets of (name, price, quantity) lines."""


class Basket:
    def __init__(self, lines=()):
        self.lines = list(lines)

    def __len__(self):
        return len(self.lines)

    def __eq__(self, other):
        return isinstance(other, Basket) and self.lines == other.lines

    def add(self, name, price, quantity=1):
        self.lines.append((name, price, quantity))
        return self

    def total(self):
        """The sum of price * quantity over the lines."""
        return sum(price for _, price, quantity in self.lines)
