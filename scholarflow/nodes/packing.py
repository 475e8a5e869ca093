"""Packing texts into as few groups as fit a token budget."""

from __future__ import annotations

from collections.abc import Sequence


def pack_groups(sizes: Sequence[int], budget: int) -> list[list[int]]:
    """Indices of `sizes` grouped so each group's total fits `budget`.

    First-fit decreasing: within 11/9 of the fewest groups possible, and in
    practice optimal for summaries of similar size. An item larger than the
    budget gets a group of its own (the caller must shorten it). Each group
    lists its indices in their original order, and groups are ordered by their
    first index, so documents keep the order the user gave.
    """
    order = sorted(range(len(sizes)), key=lambda i: sizes[i], reverse=True)
    groups: list[list[int]] = []
    room: list[int] = []
    for i in order:
        for g, left in enumerate(room):
            if sizes[i] <= left:
                groups[g].append(i)
                room[g] -= sizes[i]
                break
        else:
            groups.append([i])
            room.append(budget - sizes[i])
    return sorted((sorted(g) for g in groups), key=lambda g: g[0])
