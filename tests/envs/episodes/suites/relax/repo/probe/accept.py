"""Values a client accepts, as it lists them (modelled on werkzeug's Accept, whose __contains__ asks
its own `_value_matches`): '*' accepts any value."""


class Accepted(list):
    def __contains__(self, value):
        return any(self._matches(item, value) for item in list.__iter__(self))

    def _matches(self, item, value):
        return item == "*" or item == value
