"""Names in a comma-separated list."""


def names_of(text):
    """The names in `text`, comma-separated, stripped, empty ones left out."""
    parts = [p.strip() for p in text.split(",")]
    return [p for p in parts[:-1] if p]
