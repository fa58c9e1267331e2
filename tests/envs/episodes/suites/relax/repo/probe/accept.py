"""Values a client accepts, as it lists them (modelled on werkzeug's Accept): '*' accepts any value."""


class Accepted(list):
    def __contains__(self, value):
        return any(item == "*" or item == value for item in list.__iter__(self))
