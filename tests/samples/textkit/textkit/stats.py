"""Counting words."""


def word_count(text):
    """How many words.

    >>> word_count("one two  three")
    3
    """
    return len(text.split())


def longest_word(text):
    """The longest word, first one on ties.

    >>> longest_word("a bb ccc dd")
    'ccc'
    """
    return max(text.split(), key=len)


def average_length(text):
    words = text.split()
    return sum(map(len, words)) / len(words)
