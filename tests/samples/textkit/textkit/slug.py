"""Turn titles into URL slugs."""


def slugify(title):
    """Lower-case words joined by dashes.

    >>> slugify("Hello, World")
    'hello-world'
    >>> slugify("  many   spaces ")
    'many-spaces'
    """
    words = "".join(c if c.isalnum() else " " for c in title.lower()).split()
    return "-".join(words)
