"""String helpers."""


def slugify(text):
    """Lowercase words joined by single hyphens; other characters dropped."""
    words = []
    current = ""
    for ch in text.lower():
        if ch.isalnum():
            current += ch
        elif current:
            words.append(current)
            current = ""
    if current:
        words.append(current)
    return "-".join(words)


def is_palindrome(text):
    """True when the letters and digits read the same both ways (case ignored)."""
    letters = [ch.lower() for ch in text if ch.isalnum()]
    i = 0
    j = len(letters) - 1
    while i < j:
        if letters[i] != letters[j]:
            return False
        i += 1
        j -= 1
    return True


def count_vowels(text):
    """Number of vowels (a, e, i, o, u, either case)."""
    count = 0
    for ch in text:
        if ch.lower() in "aeiou":
            count += 1
    return count


def caesar_shift(text, shift):
    """Shift letters by `shift` places, wrapping around; other characters unchanged."""
    out = []
    for ch in text:
        if ch.isalpha() and ch.isascii():
            base = ord("A") if ch.isupper() else ord("a")
            out.append(chr((ord(ch) - base + shift) % 26 + base))
        else:
            out.append(ch)
    return "".join(out)


def truncate_text(text, limit):
    """Text cut to at most `limit` characters, ending in '...' when it was cut."""
    if limit < 3:
        raise ValueError("limit must be at least 3")
    if len(text) <= limit:
        return text
    return text[:limit - 3] + "..."


def word_frequencies(text):
    """Word -> count for lowercase words separated by whitespace."""
    freq = {}
    for word in text.lower().split():
        freq[word] = freq.get(word, 0) + 1
    return freq


def longest_word(text):
    """The longest whitespace-separated word; the first one on ties; '' for no words."""
    best = ""
    for word in text.split():
        if len(word) > len(best):
            best = word
    return best


def run_length_encode(text):
    """'aaabcc' -> 'a3b1c2'."""
    if not text:
        return ""
    out = []
    prev = text[0]
    run = 1
    for ch in text[1:]:
        if ch == prev:
            run += 1
        else:
            out.append(prev + str(run))
            prev = ch
            run = 1
    out.append(prev + str(run))
    return "".join(out)


def pad_left(text, width, fill=" "):
    """Text right-aligned in a field of `width` characters."""
    if len(fill) != 1:
        raise ValueError("fill must be one character")
    missing = width - len(text)
    if missing <= 0:
        return text
    return fill * missing + text


def initials(name):
    """Upper-case first letters of each word: 'ada lovelace' -> 'AL'."""
    return "".join(word[0].upper() for word in name.split() if word)
