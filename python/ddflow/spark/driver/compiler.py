"""Top-level compilation for the Spark backend: builds a run's parts (context, operators,
reduce stages, state, iterate driver) after validating the inputs and the plan, and turns
each top-level plan node into its whole history as a DataFrame, by the node's ``top`` rule
in the operator registry (``ops.py``), lazily and memoized.

Outside loops every operator processes its input's whole history once; an iterate scope
runs as supersteps (``supersteps.py``) when its ``leave`` is first needed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from ddflow.capture import Capture
from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import PlanError
from ddflow.input import InputSession
from ddflow.plan import ReduceOp
from ddflow.spark.driver import validate
from ddflow.spark.driver.context import ERROR_MODES, RunContext, key_partitions
from ddflow.spark.driver.error_frames import ErrorFrames
from ddflow.spark.driver.key_regions import KeyRegions
from ddflow.spark.driver.lineage import Checkpoints, consolidated
from ddflow.spark.driver.operators import Operators
from ddflow.spark.driver.ops import SPARK_OPS
from ddflow.spark.driver.preflight import check_linked_dtypes
from ddflow.spark.driver.progress import Meter
from ddflow.spark.driver.reduce_stages import ReduceStages
from ddflow.spark.driver.schemas import use_time_zone
from ddflow.spark.driver.state import REDUCE_STATE_MODES, State, StoreUse, state_parent
from ddflow.spark.driver.supersteps import IterateDriver
from ddflow.spark.tasks.batches import DIFF, FnTable, ccol, tcol

__all__ = ["Compiler"]


class Compiler:
    """Compiles the plan nodes an output needs into DataFrames (lazily, memoized); runs each
    iterate scope through an ``IterateDriver`` when its ``leave`` is first needed."""

    def __init__(
        self,
        spark: SparkSession,
        flow: Dataflow,
        inputs: Mapping[InputSession, DataFrame],
        outputs: Sequence[Collection | Capture],
        partitions: int | None,
        checkpoint: str,
        meter: Meter | None,
        reduce_state: str = "store",
        state_dir: str | None = None,
        errors: str = "raise",
        key_regions: bool | None = None,
    ) -> None:
        """``key_regions``: run key-local regions as one engine stage each
        (``key_regions.py``); off, every operator runs on its own. Default: on, unless the
        environment variable ``DDFLOW_SPARK_KEY_REGIONS`` is ``0``."""
        if key_regions is None:
            key_regions = os.environ.get("DDFLOW_SPARK_KEY_REGIONS", "1") != "0"
        cuts = Checkpoints(checkpoint)
        if reduce_state not in REDUCE_STATE_MODES:
            raise PlanError(
                f"run_on_spark: reduce_state must be 'store' or 'shuffle', got {reduce_state!r}"
            )
        if errors not in ERROR_MODES:
            raise PlanError(f"run_on_spark: errors must be 'raise' or 'collect', got {errors!r}")
        store = StoreUse(state_parent(spark, state_dir) if reduce_state == "store" else None)
        use_time_zone(spark)
        self.out_nodes = [validate.output_node(flow, o) for o in outputs]
        needed = validate.needed_nodes(flow.builder.plan.nodes, self.out_nodes)
        validate.check_ops(flow, needed)
        dims = validate.time_dims(flow, inputs)
        self.frames = validate.input_frames(flow, needed, inputs, dims)
        """The validated input frames, by input node."""
        check_linked_dtypes(flow, inputs, dims)
        fns = flow.builder.functions
        self.ctx = RunContext(
            spark=spark,
            plan=flow.builder.plan,
            needed=needed,
            dims=dims,
            partitions=key_partitions(spark, partitions),
            fns=FnTable({i: fns[i] for i in range(len(fns))}),
            meter=meter,
            errors=ErrorFrames(spark, dims),
            collect=errors == "collect",
            reduce_state=reduce_state,
        )
        self.ops = Operators(self.ctx)
        self.reduces = ReduceStages(self.ctx)
        self.state = State(self.ctx, cuts, self.reduces, store)
        self.iterates = IterateDriver(self.ctx, self.ops, self.state, self.top)
        self.regions = KeyRegions(self.ctx, self.out_nodes, enabled=key_regions)
        self.memo: dict[int, DataFrame] = {}
        self._general = False
        """Compiling operator by operator, regions ignored (for their exits' schemas)."""
        self._general_memo: dict[int, DataFrame] = {}

    def top(self, n: int) -> DataFrame:
        """Top-level node ``n``'s whole history (memoized): the exit of a key-local region
        from that region's stage (``key_regions.py``), any other node by its registry
        rule."""
        memo = self._general_memo if self._general else self.memo
        if n in memo:
            return memo[n]
        ctx = self.ctx
        inside, ctx.iteration = ctx.iteration, None
        try:
            rule = SPARK_OPS[ctx.nodes[n]["op"]].top
            if rule is None:
                raise validate.UnsupportedOperatorError(
                    f"{ctx.label(n)}: operator {ctx.nodes[n]['op']!r} runs only inside an "
                    f"iterate on the Spark backend"
                )
            if not self._general and self.regions.region_of(n) is not None:
                df = self.regions.frame(n, self.top, self._general_schema)
            else:
                df = rule(self, n)
        finally:
            ctx.iteration = inside
        memo[n] = df
        return df

    def _general_schema(self, n: int) -> StructType:
        """Node ``n``'s schema when compiled operator by operator (no job runs; its notes
        are dropped)."""
        was, self._general = self._general, True
        noted = len(self.ctx.stages)
        try:
            return self.top(n).schema
        finally:
            self._general = was
            del self.ctx.stages[noted:]

    def reduce(self, n: int) -> DataFrame:
        """Top-level reduce ``n``: the engine's reduce operator per key partition over the
        whole history of its input."""
        ctx, reduces = self.ctx, self.reduces
        arr_df = self.top(ctx.inputs(n)[0])
        spec = reduces.spec(n, arr_df, collect=ctx.collect)
        raw = reduces.run(spec, reduces.tagged_input(arr_df, spec), stateful=False)
        if ctx.collect:
            ctx.errors.split(n, raw, raw.columns, None)
        ctx.note(n, "repartition(key) + engine reduce operator in mapInArrow, whole history")
        return reduces.output(raw, spec)

    def leave(self, n: int) -> DataFrame:
        """Leave ``n``: its iterate scope run as supersteps (once per scope)."""
        scope = self.ctx.nodes[self.ctx.inputs(n)[0]]["scope"]
        return self.iterates.run_scope(scope)[n]

    def output(self, n: int) -> DataFrame:
        """Node ``n``'s history in the user's column naming, consolidated."""
        df = self.top(n)
        if self.ctx.nodes[n]["op"] != ReduceOp.OP:
            # A reduce's output is consolidated already: each key is in one partition, whose
            # function sums equal updates and drops zeros.
            df = consolidated(df)
        return self.named(n, df)

    def named(self, n: int, df: DataFrame) -> DataFrame:
        """Updates ``df`` of node ``n`` in the user's column naming."""
        dims = self.ctx.dims
        names = self.ctx.columns(n)
        tnames = ["time"] if dims == 1 else [f"time_{j}" for j in range(dims)]
        return df.select(
            *[F.col(ccol(i)).alias(c) for i, c in enumerate(names)],
            *[F.col(tcol(j)).alias(t) for j, t in enumerate(tnames)],
            F.col(DIFF).alias("diff"),
        )

    def close(self) -> None:
        """Deletes the run's state store."""
        self.state.store.close()
