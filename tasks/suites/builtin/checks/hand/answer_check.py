"""Checks a question task's answer: FIXRL_ANSWER (or /tmp/fixrl_answer.txt) against EXPECTED.

Usage: python answer_check.py EXPECTED [EXPECTED ...]. Exit 0 when the normalised answer equals one
of the expected values (case, surrounding quotes/backticks/whitespace, a trailing period and `()`
ignored), 1 otherwise.
"""
import os
import sys


def normalise(text):
    text = text.strip().strip("`'\" ").strip()
    if text.endswith("."):
        text = text[:-1].strip()
    if text.endswith("()"):
        text = text[:-2]
    return text.strip("`'\" ").lower()


def main():
    answer = os.environ.get("FIXRL_ANSWER")
    if answer is None and os.path.exists("/tmp/fixrl_answer.txt"):
        with open("/tmp/fixrl_answer.txt", encoding="utf-8") as f:
            answer = f.read()
    got = normalise(answer or "")
    want = {normalise(e) for e in sys.argv[1:]}
    if got and got in want:
        print("correct")
        return 0
    print(f"wrong answer: {answer!r}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
