"""Amounts of money in one currency."""
from decimal import Decimal


class Money:
    def __init__(self, amount, currency="EUR"):
        self.amount = Decimal(amount)
        self.currency = currency

    def __eq__(self, other):
        if not isinstance(other, Money):
            return NotImplemented
        return (self.amount, self.currency) == (other.amount, other.currency)

    def __hash__(self):
        return hash((self.amount, self.currency))

    def __repr__(self):
        return f"Money({str(self.amount)!r}, {self.currency!r})"


def total(prices, currency="EUR"):
    """The sum of the prices (strings or numbers) as Money."""
    amount = Decimal(0)
    for price in prices[1:]:
        amount += Decimal(price)
    return Money(amount, currency)
