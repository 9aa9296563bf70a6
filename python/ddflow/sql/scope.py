"""Relations under translation and SQL name resolution.

A :class:`Relation` is a ddflow collection with the SQL view of its columns: each
:class:`Field` has the qualifier it is visible under (a table name or alias), its SQL name,
and the collection column holding it. Collection columns get names unique in the whole query
(:class:`Names`), so joining two relations never clashes and a field keeps its column through
joins, filters and added columns; the final ``SELECT`` renames them to the output names.

Names match case-insensitively unless quoted, as in DuckDB. A name that several fields
match is ambiguous; a name no field matches may belong to an enclosing query (a correlated
subquery), which :class:`Scope` looks up through its ``outer`` chain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ddflow.collection import Collection

__all__ = ["Field", "Names", "Relation", "Scope", "Lookup"]


@dataclass(frozen=True)
class Field:
    """One column of a relation as SQL sees it."""

    qualifier: str | None
    """The table name or alias it is visible under (lower case), or None."""
    name: str
    """Its SQL name as written (matched case-insensitively)."""
    column: str
    """The collection column that holds it."""
    qualified_only: bool = False
    """Visible only as ``qualifier.name`` (the other side's key of a ``USING`` join)."""


@dataclass
class Relation:
    """A collection and the SQL fields over its columns (hidden columns have no field)."""

    coll: Collection
    fields: list[Field]

    def requalified(self, qualifier: str | None) -> Relation:
        """The same relation with every field under ``qualifier`` (a table alias)."""
        return Relation(
            self.coll,
            [Field(qualifier, f.name, f.column) for f in self.fields if not f.qualified_only],
        )

    def matching(self, name: str, qualifier: str | None) -> list[Field]:
        """The fields called ``name`` (under ``qualifier`` if given)."""
        low = name.lower()
        return [
            f
            for f in self.fields
            if f.name.lower() == low
            and (
                f.qualifier == qualifier.lower() if qualifier is not None else not f.qualified_only
            )
        ]

    def qualifiers(self) -> set[str]:
        """The qualifiers its fields are visible under."""
        return {f.qualifier for f in self.fields if f.qualifier is not None}


@dataclass
class Names:
    """Fresh collection column names for one query: ``<name>_<n>`` in ``[A-Za-z0-9_]``
    (safe on Spark too)."""

    count: int = 0

    def fresh(self, hint: str) -> str:
        """A column name not used before in this query."""
        self.count += 1
        base = re.sub(r"\W", "_", hint.lower())[:40] or "c"
        return f"{base}_{self.count}"


@dataclass(frozen=True)
class Lookup:
    """Where a name resolved: the field, and how many scopes out (0: this query)."""

    field: Field
    depth: int


@dataclass
class Scope:
    """The fields a query's expressions can name, with the enclosing query's scope for
    correlated references."""

    relation: Relation
    outer: Scope | None = None

    def find(self, name: str, qualifier: str | None) -> tuple[list[Field], Lookup | None]:
        """The fields of this scope matching (several: ambiguous), or the nearest enclosing
        scope's single match."""
        here = self.relation.matching(name, qualifier)
        if here:
            return here, None
        depth, outer = 1, self.outer
        while outer is not None:
            found = outer.relation.matching(name, qualifier)
            if len(found) == 1:
                return [], Lookup(found[0], depth)
            if found:
                return found, None
            depth, outer = depth + 1, outer.outer
        return [], None
