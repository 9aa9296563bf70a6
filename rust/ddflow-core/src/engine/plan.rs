//! The dataflow plan: parsed from the JSON that the Python package builds (see `PLAN.md`).

use super::operators::{
    advance, arrange, capture, consolidate, delay, filter, inert, inspect, join, leave, negate,
    passthrough, python, reduce, scale, select, temporal_filter, variable, watermark, Operator,
};
use crate::error::{Error, Result};
use crate::expr::Expr;
use serde::{Deserialize, Serialize};

/// A scope: the top level (id 0) or an `iterate` body.
#[derive(Clone, Debug)]
pub struct Scope {
    /// Parent scope (None for the top level).
    pub parent: Option<usize>,
    /// Nesting depth (0 for the top level).
    pub depth: usize,
    /// Iterations are `0..max_iterations` when set.
    pub max_iterations: Option<u64>,
}

/// An aggregate of `reduce` (JSON: `{"kind": ..., fields}`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Agg {
    /// Least value of a val column among values with positive count.
    Min { column: usize },
    /// Greatest value of a val column among values with positive count.
    Max { column: usize },
    /// Signed weighted sum of a val column.
    Sum { column: usize },
    /// Signed sum of counts.
    Count,
    /// Each distinct val with positive count, once.
    Distinct,
    /// The `k` least (or greatest) val rows by a column, among values with positive count.
    TopK {
        k: usize,
        column: usize,
        #[serde(default)]
        descending: bool,
    },
    /// The val rows (counted with multiplicity) ranked by `order`, SQL's `ROW_NUMBER`,
    /// `RANK` or `DENSE_RANK` over one key's rows; keeps the rows ranked `min_rank..=max_rank`, with
    /// their rank as a last int64 column when `emit` (see `operators::aggregate_rank`).
    Rank {
        order: Vec<SortKey>,
        #[serde(default)]
        function: RankFunction,
        #[serde(default = "one")]
        min_rank: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_rank: Option<u64>,
        #[serde(default)]
        emit: bool,
    },
    /// Output count `fn(count)` per row, computed by a vectorised Python callback.
    ThresholdPy {
        #[serde(rename = "fn")]
        func: u64,
    },
    /// A Python reducer called once per batch of keys.
    Python {
        #[serde(rename = "fn")]
        func: u64,
        columns: usize,
    },
    /// Several one-row aggregates of a group, computed in one pass over its vals: one
    /// output row per group (the concatenation of the parts' columns) while any val has a
    /// non-zero count (see `operators::aggregate_group`).
    Group { aggs: Vec<GroupAgg> },
}

fn one() -> u64 {
    1
}

/// One key of an [`Agg::Rank`]'s order: a val column, descending or not, nulls first or
/// last.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SortKey {
    pub column: usize,
    #[serde(default)]
    pub descending: bool,
    #[serde(default)]
    pub nulls_first: bool,
}

/// How an [`Agg::Rank`] numbers its rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankFunction {
    /// 1, 2, 3, ... in order (ties broken by the whole row).
    #[default]
    RowNumber,
    /// One more than the number of rows before the row's peers (rows equal in `order`).
    Rank,
    /// One more than the number of distinct `order` values before the row's.
    DenseRank,
}

/// One part of an [`Agg::Group`] (JSON: `{"kind": ..., "column": i, "name": ...}`; `name`
/// is optional and used only in error messages).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GroupAgg {
    /// Signed weighted sum of a val column (int64 or float64).
    Sum {
        column: usize,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        name: String,
    },
    /// Signed sum of counts (`count(*)`), or with `column` the signed sum of the counts of
    /// the rows whose `column` is not null (`count(column)`).
    Count {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        column: Option<usize>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        name: String,
    },
    /// Weighted sum over the signed sum of counts, as float64.
    Mean {
        column: usize,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        name: String,
    },
    /// Least value of a val column among values with positive count.
    Min {
        column: usize,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        name: String,
    },
    /// Greatest value of a val column among values with positive count.
    Max {
        column: usize,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        name: String,
    },
    /// The number of distinct non-null values of a val column with positive count (SQL
    /// `count(distinct column)`).
    CountDistinct {
        column: usize,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        name: String,
    },
}

impl Agg {
    /// Parses an aggregate from its JSON (a `reduce` node's `agg`).
    pub fn from_json(text: &str) -> Result<Agg> {
        serde_json::from_str(text).map_err(|e| Error::Plan(format!("invalid aggregate: {e}")))
    }
}

/// The operator of a node, with its own arguments (JSON: `"op"` and the fields of the
/// node beside the common ones, see `PLAN.md`).
///
/// This enum is the one definition of the operator catalogue: the engine's operator
/// registry ([`Node::operator`]), the names the Python package builds plans with (checked
/// against [`OPERATORS`] by the agreement test) and the Spark backend's registry all follow it.
#[derive(Clone, Debug, Serialize, Deserialize, strum::IntoStaticStr, strum::VariantNames)]
#[serde(tag = "op", rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Op {
    Input {
        name: String,
    },
    /// A constant collection (`constant.rs`): `rows` of JSON values, typed by `dtypes` (one
    /// per column) as literals are, each at the least time with diff +1.
    Constant {
        rows: Vec<Vec<serde_json::Value>>,
        dtypes: Vec<String>,
    },
    Select {
        #[serde(with = "exprs_json")]
        exprs: Vec<Expr>,
    },
    Filter {
        #[serde(with = "expr_json")]
        predicate: Expr,
    },
    MapPy {
        #[serde(rename = "fn")]
        func: u64,
    },
    FlatMapPy {
        #[serde(rename = "fn")]
        func: u64,
    },
    FilterPy {
        #[serde(rename = "fn")]
        func: u64,
    },
    Concat,
    Negate,
    /// Every diff multiplied by `factor`.
    Scale {
        factor: i64,
    },
    Consolidate,
    /// Moves the iteration coordinate to `max(current, expr(row))` (int64, inside `iterate`).
    AdvanceIteration {
        #[serde(with = "expr_json")]
        expr: Expr,
    },
    /// Holds updates by time until their time is complete.
    Delay,
    Arrange {
        key: Vec<usize>,
    },
    Join {
        #[serde(default)]
        kind: JoinKind,
        /// Whether null keys match each other (SQL, the default: a key with a null column
        /// never matches).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        nulls_equal: bool,
    },
    Reduce {
        agg: Agg,
    },
    Enter,
    EnterArrangement,
    /// Another dataflow's top-level arrangement `source` (a node id of the engine this plan
    /// is attached to), read without a copy.
    ImportTrace {
        source: usize,
    },
    Variable {
        result: usize,
    },
    Leave,
    InspectPy {
        #[serde(rename = "fn")]
        func: u64,
        #[serde(default = "yes")]
        batch: bool,
    },
    Capture,
    Probe,
    /// Event time (`operators/watermark.rs`): input 0 split by a watermark (its greatest
    /// inserted int64 `column` minus `lateness`) into on-time and late updates, or (`emit =
    /// "closed"`) input 1's rows released once the watermark passes their `probe_column`.
    Watermark {
        column: usize,
        lateness: i64,
        emit: watermark::Emit,
        #[serde(default)]
        probe_column: usize,
    },
    /// `now()` in a filter (`operators/temporal_filter.rs`): each record kept while the
    /// logical time lies in `[max(lower), min(upper))`, its bounds evaluated on the record.
    TemporalFilter {
        lower: Vec<temporal_filter::TimeBound>,
        upper: Vec<temporal_filter::TimeBound>,
    },
}

fn yes() -> bool {
    true
}

/// The flavour of a join.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JoinKind {
    #[default]
    Join,
    Semijoin,
    Antijoin,
}

/// Every operator's plan name, in declaration order (the `"op"` tag of a node).
pub const OPERATORS: &[&str] = <Op as strum::VariantNames>::VARIANTS;

/// One node of the plan.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Node {
    pub id: usize,
    #[serde(flatten)]
    pub op: Op,
    pub scope: usize,
    pub inputs: Vec<usize>,
    pub columns: Vec<String>,
    #[serde(default)]
    pub label: String,
}

/// Expressions in their JSON form (`crate::expr`'s `from_json` / `to_json`).
mod expr_json {
    use crate::expr::Expr;
    use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(e: &Expr, s: S) -> Result<S::Ok, S::Error> {
        e.to_json().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Expr, D::Error> {
        Expr::from_json(&Value::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// Lists of expressions in their JSON form.
mod exprs_json {
    use crate::expr::Expr;
    use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(es: &[Expr], s: S) -> Result<S::Ok, S::Error> {
        es.iter()
            .map(|e| e.to_json())
            .collect::<Vec<Value>>()
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Expr>, D::Error> {
        Vec::<Value>::deserialize(d)?
            .iter()
            .map(|v| Expr::from_json(v).map_err(D::Error::custom))
            .collect()
    }
}

/// A scope as written in plan JSON.
#[derive(Serialize, Deserialize)]
struct ScopeJson {
    #[serde(default)]
    id: Option<usize>,
    #[serde(default)]
    parent: Option<usize>,
    /// Checked by [`Plan::from_json`] (an integer from 1, or null), so that its error names
    /// the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_iterations: Option<serde_json::Value>,
}

/// A plan as written in JSON, before validation.
#[derive(Serialize, Deserialize)]
struct PlanJson {
    #[serde(default = "plan_version")]
    version: u64,
    time_dims: usize,
    #[serde(default)]
    scopes: Vec<ScopeJson>,
    nodes: Vec<Node>,
}

fn plan_version() -> u64 {
    PLAN_VERSION
}

/// The plan format version this engine reads and writes.
pub const PLAN_VERSION: u64 = 1;

impl Node {
    /// The operator's short name (as in the plan JSON).
    pub fn op_name(&self) -> &'static str {
        (&self.op).into()
    }

    /// The upstream nodes feeding each of the node's input ports (`variable`: the source,
    /// then its result; `join`: left, right; `concat`: one port per input).
    pub fn ports(&self) -> Vec<Vec<usize>> {
        match &self.op {
            Op::Variable { result } => vec![vec![self.inputs[0]], vec![*result]],
            Op::Concat => self.inputs.iter().map(|&i| vec![i]).collect(),
            Op::Join { .. } => vec![vec![self.inputs[0]], vec![self.inputs[1]]],
            Op::Watermark { .. } => self.inputs.iter().map(|&i| vec![i]).collect(),
            Op::Input { .. } | Op::Constant { .. } => vec![vec![]],
            _ => vec![self.inputs.clone()],
        }
    }

    /// A fresh instance of the node's operator (one per worker).
    pub fn operator(&self, plan: &Plan) -> Box<dyn Operator> {
        let coord = || {
            plan.iter_coord(self.scope)
                .expect("an operator inside a scope")
        };
        let max_iterations = plan.scopes[self.scope].max_iterations;
        match &self.op {
            Op::Input { .. }
            | Op::Constant { .. }
            | Op::Probe
            | Op::EnterArrangement
            | Op::ImportTrace { .. } => Box::new(inert::Inert),
            Op::Concat | Op::Enter => Box::new(passthrough::PassThrough),
            Op::Negate => Box::new(negate::Negate),
            Op::Scale { factor } => Box::new(scale::Scale::new(*factor)),
            Op::Leave => Box::new(leave::Leave::new(
                plan.iter_coord(plan.nodes[self.inputs[0]].scope)
                    .expect("leave from a scope"),
            )),
            Op::Variable { .. } => Box::new(variable::Variable::new(coord(), max_iterations)),
            Op::Select { exprs } => Box::new(select::Select::new(exprs)),
            Op::Filter { predicate } => Box::new(filter::Filter::new(predicate)),
            Op::AdvanceIteration { expr } => Box::new(advance::AdvanceIteration::new(
                expr,
                coord(),
                max_iterations,
            )),
            Op::MapPy { func } => Box::new(python::PyStage::new(python::PyKind::Map, *func)),
            Op::FlatMapPy { func } => {
                Box::new(python::PyStage::new(python::PyKind::FlatMap, *func))
            }
            Op::FilterPy { func } => Box::new(python::PyStage::new(python::PyKind::Filter, *func)),
            Op::InspectPy { func, .. } => Box::new(inspect::Inspect::new(
                *func,
                plan.time_dims + plan.scopes[self.scope].depth,
            )),
            Op::Delay => Box::new(delay::DelayState::new()),
            Op::Consolidate => Box::new(consolidate::Consolidate::new(self.columns.len())),
            Op::Arrange { key } => Box::new(arrange::Arrange::new(key, self.columns.len())),
            Op::Join { kind, nulls_equal } => {
                Box::new(join::Join::new(*kind).with_nulls_equal(*nulls_equal))
            }
            Op::Reduce { agg } => Box::new(reduce::Reduce::new(
                agg,
                plan.arrange_key(self.inputs[0]).map_or(0, |k| k.len()),
            )),
            Op::Capture => Box::new(capture::Capture::default()),
            Op::Watermark {
                column,
                lateness,
                emit,
                probe_column,
            } => Box::new(watermark::Watermark::new(
                *column,
                *lateness,
                *emit,
                *probe_column,
            )),
            Op::TemporalFilter { lower, upper } => {
                Box::new(temporal_filter::TemporalFilter::new(lower, upper))
            }
        }
    }

    /// The `arrange` node whose trace this node's output is (itself for `arrange`; the
    /// input's for `enter_arrangement` and `import_trace`), given those of earlier nodes.
    pub fn trace_source(&self, earlier: &[Option<usize>]) -> Option<usize> {
        match self.op {
            Op::Arrange { .. } => Some(self.id),
            Op::EnterArrangement | Op::ImportTrace { .. } => earlier[self.inputs[0]],
            _ => None,
        }
    }

    /// Whether the node's output is an arrangement.
    pub fn is_arrangement(&self) -> bool {
        matches!(
            self.op,
            Op::Arrange { .. } | Op::EnterArrangement | Op::ImportTrace { .. }
        )
    }
}

/// A parsed, validated plan.
#[derive(Clone, Debug)]
pub struct Plan {
    pub time_dims: usize,
    pub scopes: Vec<Scope>,
    pub nodes: Vec<Node>,
}

impl Plan {
    /// Parses and validates a plan from its JSON text.
    pub fn from_json(text: &str) -> Result<Plan> {
        let json: PlanJson = crate::expr::json::from_str_deep(text, "plan JSON")?;
        if json.version != PLAN_VERSION {
            return Err(Error::Plan(format!(
                "plan format version {} is not supported (this engine reads version \
                 {PLAN_VERSION})",
                json.version
            )));
        }
        let time_dims = json.time_dims;
        let mut scopes: Vec<Scope> = Vec::new();
        for (i, s) in json.scopes.into_iter().enumerate() {
            if i > 0 && s.parent.is_none_or(|p| p >= i) {
                return Err(Error::Plan(format!(
                    "scope {i}: parent must be an earlier scope"
                )));
            }
            let max_iterations = match &s.max_iterations {
                None | Some(serde_json::Value::Null) => None,
                Some(v) => match v.as_u64() {
                    Some(m) if m >= 1 => Some(m),
                    _ => {
                        return Err(Error::Plan(format!(
                            "scope {i}: max_iterations must be null or an integer from 1 to \
                             2**64-1, got {v}"
                        )))
                    }
                },
            };
            let depth = s
                .parent
                .map(|p| scopes.get(p).map_or(1, |s| s.depth + 1))
                .unwrap_or(0);
            scopes.push(Scope {
                parent: s.parent,
                depth,
                max_iterations,
            });
        }
        if scopes.is_empty() {
            scopes.push(Scope {
                parent: None,
                depth: 0,
                max_iterations: None,
            });
        }
        let max_depth = scopes.iter().map(|s| s.depth).max().unwrap_or(0);
        if time_dims == 0 || time_dims + max_depth > crate::lattice::MAX_DIMS {
            return Err(Error::Plan(format!(
                "time_dims {time_dims} plus iterate nesting depth {max_depth} must be between 1 and {}",
                crate::lattice::MAX_DIMS
            )));
        }
        let mut nodes = json.nodes;
        for (i, n) in nodes.iter_mut().enumerate() {
            if n.label.is_empty() {
                n.label = format!("{}#{i}", n.op_name());
            }
            let ctx = &n.label;
            if n.id != i {
                return Err(Error::Plan(format!(
                    "{ctx}: id {} does not match its position {i}",
                    n.id
                )));
            }
            if n.scope >= scopes.len() {
                return Err(Error::Plan(format!("{ctx}: unknown scope {}", n.scope)));
            }
            if let Some(bad) = n.inputs.iter().find(|&&x| x >= i) {
                return Err(Error::Plan(format!(
                    "{ctx}: input {bad} is not an earlier node"
                )));
            }
        }
        let plan = Plan {
            time_dims,
            scopes,
            nodes,
        };
        plan.validate()?;
        Ok(plan)
    }

    /// The plan as JSON text ([`Plan::from_json`] reads it back).
    pub fn to_json(&self) -> String {
        let json = PlanJson {
            version: PLAN_VERSION,
            time_dims: self.time_dims,
            scopes: self
                .scopes
                .iter()
                .enumerate()
                .map(|(i, s)| ScopeJson {
                    id: Some(i),
                    parent: s.parent,
                    max_iterations: s.max_iterations.map(serde_json::Value::from),
                })
                .collect(),
            nodes: self.nodes.clone(),
        };
        serde_json::to_string(&json).expect("plans serialize")
    }

    fn validate(&self) -> Result<()> {
        for n in &self.nodes {
            let want = match &n.op {
                Op::Input { .. } | Op::Constant { .. } | Op::ImportTrace { .. } => Some(0),
                Op::Join { .. } => Some(2),
                Op::Watermark { emit, .. } => {
                    let probes = matches!(emit, watermark::Emit::Closed | watermark::Emit::Expire);
                    Some(1 + usize::from(probes))
                }
                Op::Concat => None,
                _ => Some(1),
            };
            if let Some(w) = want {
                if n.inputs.len() != w {
                    return Err(Error::Plan(format!(
                        "{}: expects {w} inputs, got {}",
                        n.label,
                        n.inputs.len()
                    )));
                }
            }
            for &i in &n.inputs {
                let inp = &self.nodes[i];
                let needs_arr = matches!(
                    n.op,
                    Op::Join { .. } | Op::Reduce { .. } | Op::EnterArrangement
                );
                if needs_arr != inp.is_arrangement() {
                    return Err(Error::Plan(format!(
                        "{}: input {} ({}) {} an arrangement",
                        n.label,
                        inp.label,
                        inp.op_name(),
                        if needs_arr { "must be" } else { "must not be" }
                    )));
                }
                let expected_scope = match n.op {
                    Op::Enter | Op::EnterArrangement => self.scopes[n.scope].parent,
                    _ => Some(n.scope),
                };
                let expected_scope = if let Op::Leave = n.op {
                    Some(self.scopes[inp.scope].parent == Some(n.scope)).map(|ok| {
                        if ok {
                            inp.scope
                        } else {
                            usize::MAX
                        }
                    })
                } else {
                    expected_scope
                };
                if expected_scope != Some(inp.scope) {
                    return Err(Error::Plan(format!(
                        "{}: input {} is in scope {}, which this operator cannot read",
                        n.label, inp.label, inp.scope
                    )));
                }
            }
            if matches!(n.op, Op::TemporalFilter { .. }) && (n.scope != 0 || self.time_dims != 1) {
                return Err(Error::Plan(format!(
                    "{}: now() needs totally ordered times: a top-level filter, with one time \
                     coordinate (time_dims=1)",
                    n.label
                )));
            }
            if matches!(n.op, Op::Watermark { .. }) && (n.scope != 0 || self.time_dims != 1) {
                return Err(Error::Plan(format!(
                    "{}: a watermark needs totally ordered times: top-level, with one time \
                     coordinate (time_dims=1)",
                    n.label
                )));
            }
            if matches!(n.op, Op::Constant { .. }) {
                if n.scope != 0 {
                    return Err(Error::Plan(format!(
                        "{}: a constant must be at the top level (enter it into an iterate)",
                        n.label
                    )));
                }
                super::constant::columns(n)?;
            }
            if matches!(n.op, Op::AdvanceIteration { .. }) && n.scope == 0 {
                return Err(Error::Plan(format!(
                    "{}: advance_iteration moves the iteration coordinate, so it must be inside \
                     an iterate scope",
                    n.label
                )));
            }
            if let Op::Variable { result } = n.op {
                if result >= self.nodes.len()
                    || self.nodes[result].scope != n.scope
                    || result <= n.id
                {
                    return Err(Error::Plan(format!(
                        "{}: result {result} must be a later node in the same scope",
                        n.label
                    )));
                }
                if n.scope == 0 {
                    return Err(Error::Plan(format!(
                        "{}: a variable must be inside an iterate scope",
                        n.label
                    )));
                }
            }
        }
        Ok(())
    }

    /// The key columns of the arrangement that node `node` (an `arrange`, or an
    /// `import_trace` of one) outputs.
    pub fn arrange_key(&self, node: usize) -> Option<&[usize]> {
        match &self.nodes[node].op {
            Op::Arrange { key } => Some(key),
            Op::ImportTrace { source } => match &self.nodes.get(*source)?.op {
                Op::Arrange { key } => Some(key),
                _ => None,
            },
            _ => None,
        }
    }

    /// The index of the iteration coordinate of a scope (None for the top level).
    pub fn iter_coord(&self, scope: usize) -> Option<usize> {
        let d = self.scopes[scope].depth;
        if d == 0 {
            None
        } else {
            Some(self.time_dims + d - 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_names_are_the_json_tags() {
        for name in OPERATORS {
            let parsed = serde_json::from_value::<Op>(serde_json::json!({ "op": name }));
            if let Err(e) = parsed {
                assert!(!e.to_string().contains("unknown variant"), "{name}: {e}");
            }
        }
        let plan =
            one_node(r#"{"id":1,"op":"negate","scope":0,"inputs":[0],"columns":["a"]}"#).unwrap();
        assert_eq!(plan.nodes[1].op_name(), "negate");
    }

    #[test]
    fn round_trips_through_json() {
        for text in [
            super::super::plans::bfs(),
            super::super::plans::bfs_counts(),
        ] {
            let plan = Plan::from_json(&text).unwrap();
            let again = Plan::from_json(&plan.to_json()).unwrap();
            assert_eq!(plan.to_json(), again.to_json());
            assert_eq!(plan.nodes.len(), again.nodes.len());
            assert!(matches!(
                again.nodes[12].op,
                Op::Reduce {
                    agg: Agg::Min { column: 0 }
                }
            ));
        }
    }

    fn one_node(node: &str) -> Result<Plan> {
        Plan::from_json(&format!(
            r#"{{"version":1,"time_dims":1,"scopes":[{{"id":0,"parent":null}}],"nodes":[
            {{"id":0,"op":"input","name":"x","scope":0,"inputs":[],"columns":["a"]}},{node}]}}"#
        ))
    }

    #[test]
    fn fields_default_and_extra_fields_are_ignored() {
        let p =
            one_node(r#"{"id":1,"op":"negate","scope":0,"inputs":[0],"columns":["a"],"note":"x"}"#)
                .unwrap();
        assert!(matches!(p.nodes[1].op, Op::Negate));
        assert_eq!(p.nodes[1].label, "negate#1");
        let p =
            one_node(r#"{"id":1,"op":"inspect_py","fn":3,"scope":0,"inputs":[0],"columns":["a"]}"#)
                .unwrap();
        assert!(matches!(
            p.nodes[1].op,
            Op::InspectPy {
                func: 3,
                batch: true
            }
        ));
    }

    #[test]
    fn malformed_plans_are_plan_errors() {
        for (node, want) in [
            (
                r#"{"id":1,"op":"nope","scope":0,"inputs":[0],"columns":["a"]}"#,
                "nope",
            ),
            (
                r#"{"id":1,"op":"map_py","scope":0,"inputs":[0],"columns":["a"]}"#,
                "fn",
            ),
            (
                r#"{"id":2,"op":"negate","scope":0,"inputs":[0],"columns":["a"]}"#,
                "position",
            ),
            (
                r#"{"id":1,"op":"negate","scope":0,"inputs":[1],"columns":["a"]}"#,
                "earlier",
            ),
            (
                r#"{"id":1,"op":"negate","scope":5,"inputs":[0],"columns":["a"]}"#,
                "scope",
            ),
            (
                r#"{"id":1,"op":"join","kind":"outer","scope":0,"inputs":[0,0],"columns":["a"]}"#,
                "outer",
            ),
            (
                r#"{"id":1,"op":"filter","predicate":{"op":"what"},"scope":0,"inputs":[0],"columns":["a"]}"#,
                "what",
            ),
        ] {
            let e = one_node(node).unwrap_err();
            assert!(matches!(e, Error::Plan(_)), "{e}");
            assert!(e.to_string().contains(want), "{want}: {e}");
        }
    }
}
