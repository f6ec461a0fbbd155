"""A small name → object registry used by every layer (categories, policies, learners)."""

from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

from libero_ll.errors import LiberoError

T = TypeVar("T")


class Registry(Generic[T]):
    """A plain mapping from a name to a class or factory, filled by a decorator.

    Args:
        kind: what the entries are ("policy", "learner", "category"), used in messages.
        hint: said after the known names when a name is unknown (e.g. how to add one of one's own).
        check: called with each entry as it is registered; returns what is wrong with it (a plugin's class
            that is not of the registry's kind), or None.
    """

    def __init__(self, kind: str, hint: str = "", check: Callable[[object], str | None] | None = None):
        self.kind = kind
        self.hint = hint
        self._check = check
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator that records ``obj`` under ``name``; a name may be taken once, and an entry the registry's
        check refuses is not taken (LiberoError: a plugin's class may name one the project or another plugin
        already took, or be no class of the registry's kind)."""

        def deco(obj: T) -> T:
            if name in self._entries:
                raise LiberoError(f"{self.kind} {name!r} is registered twice (the name is taken); choose another name")
            wrong = self._check(obj) if self._check is not None else None
            if wrong:
                raise LiberoError(f"{self.kind} {name!r} cannot be registered: {wrong}")
            self._entries[name] = obj
            return obj

        return deco

    def get(self, name: str) -> T:
        """The entry for ``name``; a LiberoError listing the known names when there is none."""
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "(none)"
            hint = f"; {self.hint}" if self.hint else ""
            raise LiberoError(f"unknown {self.kind} {name!r}; known: {known}{hint}") from None

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))
