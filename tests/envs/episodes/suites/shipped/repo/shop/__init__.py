"""A small shop: exchange rates shipped as data, baskets of priced lines."""
