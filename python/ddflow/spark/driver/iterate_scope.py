"""The shape of an iterate scope in an incremental Spark run, read from the plan: its member
nodes, its one iteration variable, the variable's source and result, the nodes that leave
the scope, and which members vary with the iteration. Both continuation paths (Spark
DataFrames, ``incremental_iterate.py``; the driver's Arrow tables, ``local_iterate.py``) run
the same superstep equations over this shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddflow.plan import LeaveOp, VariableOp
from ddflow.spark.driver.validate import UnsupportedOperatorError

if TYPE_CHECKING:
    from ddflow.spark.driver.context import RunContext

__all__ = ["IterateScope"]


@dataclass(frozen=True)
class IterateScope:
    """One iterate scope's nodes (ids in the plan)."""

    scope: int
    members: list[int]
    """The scope's nodes the run needs, in plan order."""
    var: int
    """The iteration variable."""
    result: int
    """The node whose output feeds the variable at the next iteration."""
    source: int
    """The node entering the variable's initial value."""
    leaves: list[int]
    """The nodes that take the scope's output out of it."""
    max_it: int | None
    """The scope's iteration bound, if any."""
    variant: frozenset[int]
    """The members whose output changes with the iteration (the variable and what reads it)."""

    @staticmethod
    def of(ctx: RunContext, scope: int) -> IterateScope:
        """The shape of ``scope``; an unsupported operator error unless it has exactly one
        iteration variable."""
        nodes = ctx.nodes
        members = sorted(n for n in ctx.needed if nodes[n]["scope"] == scope)
        variables = [n for n in members if nodes[n]["op"] == VariableOp.OP]
        if len(variables) != 1:
            raise UnsupportedOperatorError(
                f"{ctx.plan.scopes[scope].label}: expected one iteration variable, found "
                f"{len(variables)}"
            )
        var = variables[0]
        variant: set[int] = set()
        for n in members:
            if n == var or any(i in variant for i in nodes[n]["inputs"]):
                variant.add(n)
        return IterateScope(
            scope=scope,
            members=members,
            var=var,
            result=int(nodes[var]["result"]),
            source=int(nodes[var]["inputs"][0]),
            leaves=[
                n
                for n in ctx.needed
                if nodes[n]["op"] == LeaveOp.OP and nodes[nodes[n]["inputs"][0]]["scope"] == scope
            ],
            max_it=ctx.plan.scopes[scope].max_iterations,
            variant=frozenset(variant),
        )
