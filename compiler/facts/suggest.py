"""The one suggestion engine behind every "did you mean": directive keys, roles, inputs, partials,
section words, configuration keys and prompt names at render time. Standard library only (the
runtime uses it too).

A candidate is suggested when it is within a typo's reach of the word: Damerau–Levenshtein
distance (a transposition costs one edit, as it does for a typist) of at most 1 for words of up to
five characters and 2 for longer ones, unless the caller sets `limit`. Ties go to the candidate
that sorts first, so suggestions are deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable


def edit_distance(a: str, b: str) -> int:
    """Damerau–Levenshtein (optimal string alignment): a transposition costs 1, as typos do."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def did_you_mean(word: str, candidates: Iterable[str], *, limit: int | None = None) -> str | None:
    """The closest candidate within a typo's reach (1 edit for short words, 2 for longer ones)."""
    if limit is None:
        limit = 1 if len(word) <= 5 else 2
    best = None
    best_distance = limit + 1
    for candidate in sorted(candidates):
        if abs(len(candidate) - len(word)) > limit:
            continue  # the distance is at least the difference in length
        distance = edit_distance(word, candidate)
        if distance < best_distance and candidate != word:
            best, best_distance = candidate, distance
    return best


def suggestions(word: str, candidates: Iterable[str], *, limit: int | None = None, n: int = 3) -> list[str]:
    """Up to `n` candidates within reach of `word`, closest first (then in sorted order)."""
    if limit is None:
        limit = 1 if len(word) <= 5 else 2
    scored = []
    for candidate in sorted(set(candidates)):
        if candidate == word or abs(len(candidate) - len(word)) > limit:
            continue
        distance = edit_distance(word, candidate)
        if distance <= limit:
            scored.append((distance, candidate))
    return [candidate for _, candidate in sorted(scored)[:n]]
