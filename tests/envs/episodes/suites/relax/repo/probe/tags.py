"""Tags: a list that matches tags without regard to case."""


class Tags(list):
    def __contains__(self, tag):
        return any(t.lower() == tag.lower() for t in self)


def tags_of(text):
    """The tags of `text`: its words that start with '#', without the '#'."""
    return Tags(w[1:] for w in text.split() if w.startswith("#") and len(w) > 2)
